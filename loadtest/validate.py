"""Checks a Jev decision response body, so a 200 with garbage counts as a failure in load tests."""

from __future__ import annotations

import math
from typing import Any


def problem(body: Any, questions: dict[str, dict[str, Any]]) -> str | None:
    """What is wrong with a `/v1/systemone` response body for these questions, or None."""
    if not isinstance(body, dict):
        return "body is not a JSON object"
    if not isinstance(body.get("model"), str):
        return "model missing"
    usage = body.get("usage")
    if not isinstance(usage, dict) or not all(
        isinstance(usage.get(k), int) for k in ("input_tokens", "output_tokens")
    ):
        return "usage missing or not integers"
    answers = body.get("answers")
    if not isinstance(answers, dict) or list(answers) != list(questions):
        return "answers do not match the questions"
    for name, q in questions.items():
        a = answers[name]
        if not isinstance(a, dict) or a.get("type") != q["type"]:
            return f"{name}: wrong answer type"
        if q["type"] == "noul":
            if not _prob(a.get("noul")):
                return f"{name}: noul is not a probability"
            continue
        probs = a.get("probabilities")
        if not isinstance(probs, dict) or not all(_prob(p) for p in probs.values()):
            return f"{name}: probabilities missing"
        if not math.isclose(sum(probs.values()), 1.0, abs_tol=1e-3):
            return f"{name}: probabilities sum to {sum(probs.values()):.4f}"
        if not _prob(a.get("confidence")):
            return f"{name}: confidence missing"
        if q["type"] == "choice" and (list(probs) != list(q["criteria"]) or a.get("choice") not in probs):
            return f"{name}: choice is not one of the options"
        if q["type"] == "score" and list(probs) != [str(i) for i in range(len(q["criteria"]))]:
            return f"{name}: score probabilities are not keyed 0..n-1"
    return None


def _prob(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0
