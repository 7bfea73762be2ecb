"""Examples, the questions, reads in the gateway's option orders, the catalogue, and the
endless training streams."""

from __future__ import annotations

import gzip
import json
import random
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from app.gateway.decisions.orders import option_order

from .alerts import make_alert
from .catalog import weights_table
from .common import (
    POLICY,
    SDK_LEVELS,
    SDK_PAGE,
    SDK_TEAMS,
    SOURCES,
    SPLIT_SEEDS,
    TEAMS,
    TO_SDK_LEVEL,
    needs_page,
)
from .render import RENDERERS, sdk_state


def example(rng: random.Random, source: str | None = None) -> dict[str, Any]:
    """One alert as a sender delivers it: source, payload, the router's state, the answers."""
    alert = make_alert(rng)
    source = source or rng.choice(SOURCES)
    payload, state = RENDERERS[source](rng, alert)
    return {
        "source": source,
        "payload": payload,
        "state": state,
        "alert": alert,
        "team": alert["team"],
        "severity": alert["severity"],
        "page": alert["page"],
    }


def examples(split: str, n: int, source: str | None = None) -> list[dict[str, Any]]:
    """The first n alerts of a split (of one source, or each from a drawn source)."""
    rng = random.Random(f"alert-corpus:{SPLIT_SEEDS[split]}:{source or 'any'}")
    return [example(rng, source) for _ in range(n)]


def sdk_examples(split: str, n: int) -> list[dict[str, Any]]:
    """The first n SDK-style states of a split, with their answers on the SDK example's scale."""
    rng = random.Random(f"alert-corpus:{SPLIT_SEEDS[split]}:sdk")
    out = []
    for _ in range(n):
        alert = make_alert(rng)
        out.append({"state": sdk_state(rng, alert), "alert": alert, **sdk_answers(alert)})
    return out


def sdk_answers(alert: dict[str, Any]) -> dict[str, Any]:
    return {
        "team": SDK_TEAMS[TEAMS.index(alert["team"])],
        "severity": TO_SDK_LEVEL[alert["severity"]],
        "page": alert["page"],
    }


# -- the questions ---------------------------------------------------------------------------------


class Question(NamedTuple):
    """A question as the engine reads it: kind, instructions (None: no "Question:" line), option
    names in the request's order, and their descriptions (None: none)."""

    kind: str
    instructions: str | None
    options: tuple[str, ...]
    descriptions: tuple[str | None, ...]


def policy_questions(path: Path = POLICY) -> dict[str, Question]:
    """The default policy's three questions, as app/alerts/policy.py asks them (teams and levels in
    the policy's order, team descriptions as the choice's criteria)."""
    spec = tomllib.loads(path.read_text())
    q = spec["questions"]
    teams = spec["teams"]
    levels = tuple(spec["severity"]["levels"])
    return {
        "page": Question("noul", q["page"], ("yes", "no"), (None, None)),
        "team": Question("choice", q["team"], tuple(teams), tuple(t["description"] for t in teams.values())),
        "severity": Question("score", q["severity"], levels, (None,) * len(levels)),
    }


SDK_QUESTIONS = {
    "page": Question("noul", SDK_PAGE, ("yes", "no"), (None, None)),
    "team": Question("choice", None, SDK_TEAMS, (None,) * 3),
    "severity": Question("score", None, SDK_LEVELS, (None,) * 3),
}


def answer_index(question: Question, name: str, answers: dict[str, Any]) -> int:
    if name == "page":
        return 0 if answers["page"] else 1
    return question.options.index(answers[name])


Read = tuple[Any, str, "str | None", list[str], "list[str | None]", int, str]


def read_of(state: Any, question: Question, right: int, order: tuple[int, ...], tag: str) -> Read:
    """(state, kind, instructions, options, descriptions, right index, tag) with options in `order`."""
    return (
        state,
        question.kind,
        question.instructions,
        [question.options[i] for i in order],
        [question.descriptions[i] for i in order],
        order.index(right),
        tag,
    )


CATALOGUE = Path(__file__).resolve().parents[1] / "data" / "catalogue.jsonl.gz"
# A share of the realistic reads is the public rule catalogue's own alerts (samber/awesome-prometheus-
# alerts, CC BY 4.0: its rules outside the eval's categories, built by evals/alerts/build_public.py
# --training): the words real rules are written in, and how their authors rate them. Half of those
# come without the severity label, so the level is read from the rule's name and description
# (data/weights.toml's catalogue_share and catalogue_unlabelled). How often each question is asked of
# a realistic alert is its question_weights: the team choice is learnt last; at 0.4 it lagged on the
# sweep (dev team 0.95 in the request's order, 0.36 reversed); at 0.55, 0.99 and 0.89.


def catalogue(split: str) -> list[dict[str, Any]]:
    """The catalogue's alerts of a split ("train", or "dev": a tenth of the rules, never trained on):
    {split, rule, severity, state}."""
    with gzip.open(CATALOGUE, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [row for row in rows if row["split"] == split]


def unlabelled(state: dict[str, Any]) -> dict[str, Any]:
    """The state without the sender's severity label (any case), as `dgemma alerts eval
    --without-severity` sends it."""
    labels = {k: v for k, v in state.get("labels", {}).items() if k.lower() != "severity"}
    return {**state, "labels": labels} if labels else {k: v for k, v in state.items() if k != "labels"}


def catalogue_answers(row: dict[str, Any]) -> dict[str, Any]:
    return {"page": needs_page(row["severity"]), "severity": row["severity"]}


def _ordered(
    rng: random.Random, state: Any, q: Question, name: str, right: int, tag: str, reordered: float
) -> Read:
    """The read with options in the request's order, or (a `reordered` share) in the gateway's
    other orders, which adaptive re-reads and debias send."""
    order = tuple(range(len(q.options)))
    if rng.random() < reordered:
        if name == "page":
            # The gateway's re-reads of a noul: yes/no as lettered options, both orders.
            q = Question("choice", q.instructions, q.options, q.descriptions)
            order = (1, 0) if rng.random() < 0.5 else (0, 1)
            name = "page-as-choice"
        elif rng.random() < 0.5:
            order = option_order(len(q.options), rng.choice([1, 1, 2, 3]))
        else:  # debias sends orders of the sorted options, other clients any order
            order = tuple(rng.sample(range(len(q.options)), len(q.options)))
    return read_of(state, q, right, order, f"{tag}:{name}")


def _a_quarter() -> float:
    return 0.25


def catalogue_stream(
    seed: int, policy: dict[str, Question], reordered_share: Callable[[], float] = _a_quarter
) -> Iterator[Read]:
    """Endless reads of the catalogue's train alerts with the policy's page and severity questions
    (its rules belong to no default team: no team reads)."""
    rng = random.Random(f"alert-corpus:catalogue:{seed}")
    rows = catalogue("train")
    unlabelled_share: float = weights_table()["catalogue_unlabelled"]
    while True:
        row = rng.choice(rows)
        state = unlabelled(row["state"]) if rng.random() < unlabelled_share else row["state"]
        name = rng.choices(("page", "severity"), weights=(0.6, 0.4))[0]
        q = policy[name]
        right = answer_index(q, name, catalogue_answers(row))
        yield _ordered(rng, state, q, name, right, "catalogue", reordered_share())


def train_stream(
    seed: int, policy: dict[str, Question], reordered_share: Callable[[], float] = _a_quarter
) -> Iterator[Read]:
    """Endless reads of realistic alerts: the router's states (three sources) with the policy's
    questions, and SDK-style states with the SDK example's questions (a fifth of each the other
    way round), and a share (data/weights.toml's catalogue_share) of the public catalogue's
    alerts. Options come in the request's order, except a share (`reordered_share()`, asked per
    read) in the gateway's other orders, which adaptive re-reads and debias send."""
    rng = random.Random(f"alert-corpus:train:{seed}")
    rules = catalogue_stream(seed, policy, reordered_share)
    weights = weights_table()
    share: float = weights["catalogue_share"]
    questions_weights: dict[str, float] = weights["question_weights"]
    while True:
        if rng.random() < share:
            yield next(rules)
            continue
        alert = make_alert(rng)
        if rng.random() < 0.75:
            source = rng.choice(SOURCES)
            state: Any = RENDERERS[source](rng, alert)[1]
            questions, answers, tag = (
                (policy, alert, "policy")
                if rng.random() < 0.85
                else (SDK_QUESTIONS, sdk_answers(alert), "sdk")
            )
        else:
            state = sdk_state(rng, alert)
            questions, answers, tag = (
                (SDK_QUESTIONS, sdk_answers(alert), "sdk")
                if rng.random() < 0.8
                else (policy, alert, "policy")
            )
        name = rng.choices(list(questions_weights), weights=list(questions_weights.values()))[0]
        q = questions[name]
        yield _ordered(rng, state, q, name, answer_index(q, name, answers), tag, reordered_share())
