"""Labelled eval data: one JSON object per line, a Jev request and the expected answers.

    {"request": {"state": ..., "questions": {...}}, "expected": {"team": "database", "page": true}}

`request` is a `/v1/systemone` body (`model` may be left out: the eval sends the served model's
name). `expected` maps question names to the right answer: a choice's option name, a noul's
true/false, a score's 0-based level index in the request's `criteria` order. Questions without an
expected answer are asked but not scored; box questions are refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.core.models import dotted, validation_problems
from app.jev.wire import ChoiceQuestion, NoulQuestion, ScoreQuestion, SystemOneRequest
from evals.errors import EvalDataError


@dataclass(frozen=True)
class Scored:
    """One scored question of an item: its options in request order and the right one's index."""

    name: str
    kind: str  # noul | choice | score
    options: tuple[str, ...]  # noul: ("true", "false"); score: level indices as strings
    truth: int


@dataclass(frozen=True)
class Item:
    line: int
    request: dict[str, Any]  # the body as written, without `model`
    scored: tuple[Scored, ...]

    def body(self, model: str, policy: str | None, *, reverse: bool = False) -> dict[str, Any]:
        """The request to send: the served model, a read-policy override, options maybe reversed."""
        body = {**self.request, "model": model}
        if policy is not None:
            body["read_policy"] = {**(body.get("read_policy") or {}), "mode": policy}
        if reverse:
            body["questions"] = {name: reversed_question(q) for name, q in self.request["questions"].items()}
        return body


def reversed_question(question: dict[str, Any]) -> dict[str, Any]:
    """The same question with its options in reverse order (a noul has none to reverse)."""
    criteria: Any = question.get("criteria")
    if question["type"] == "choice":
        return {**question, "criteria": dict(reversed(list(criteria.items())))}
    if question["type"] == "score":
        return {**question, "criteria": list(reversed(criteria))}
    return question


def parse_line(line_no: int, text: str) -> Item:
    """One line of the file; EvalDataError names the line and what is wrong."""
    where = f"line {line_no}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise EvalDataError(f"{where}: not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(data, dict) or set(data) - {"request", "expected"} or "request" not in data:
        raise EvalDataError(f'{where}: expected an object with "request" and "expected"')
    request, expected = data["request"], data.get("expected")
    if not isinstance(request, dict) or not isinstance(expected, dict) or not expected:
        raise EvalDataError(f'{where}: "request" must be an object and "expected" a non-empty object')
    request = {k: v for k, v in request.items() if k != "model"}
    try:
        parsed = SystemOneRequest.model_validate({**request, "model": "eval"})
    except ValidationError as e:
        problem = validation_problems(e, path=lambda loc: dotted(("request", *loc)), most=1)
        raise EvalDataError(f"{where}: {problem}") from None
    scored = []
    for name, answer in expected.items():
        question = parsed.questions.get(name)
        if question is None:
            raise EvalDataError(f"{where}: expected.{name}: the request has no question {name!r}")
        scored.append(_scored(f"{where}: expected.{name}", name, question, answer))
    return Item(line_no, request, tuple(scored))


def _scored(where: str, name: str, question: Any, answer: Any) -> Scored:
    if isinstance(question, NoulQuestion):
        if not isinstance(answer, bool):
            raise EvalDataError(f"{where}: a noul's expected answer is true or false, not {answer!r}")
        return Scored(name, "noul", ("true", "false"), 0 if answer else 1)
    if isinstance(question, ChoiceQuestion):
        options = tuple(question.criteria)
        if answer not in options:
            raise EvalDataError(f"{where}: {answer!r} is not one of the options {list(options)}")
        return Scored(name, "choice", options, options.index(answer))
    if isinstance(question, ScoreQuestion):
        levels = len(question.criteria)
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < levels:
            raise EvalDataError(f"{where}: a score's expected answer is a level index 0..{levels - 1}")
        return Scored(name, "score", tuple(str(i) for i in range(levels)), answer)
    raise EvalDataError(f"{where}: box questions cannot be scored by the eval")


def load(path: Path, limit: int | None = None) -> list[Item]:
    """Every item of a JSONL file (blank lines skipped), or the first `limit`."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise EvalDataError(f"cannot read {path}: {e}") from None
    items = []
    for number, text in enumerate(lines, start=1):
        if text.strip():
            items.append(parse_line(number, text))
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise EvalDataError(f"{path} holds no items")
    return items
