"""The load test's response validator: a 200 with garbage must not pass."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from loadtest.corpus import QUESTIONS
from loadtest.validate import problem

pytestmark = pytest.mark.unit

GOOD: dict[str, Any] = {
    "model": "m",
    "usage": {"input_tokens": 10, "output_tokens": 3},
    "answers": {
        "page": {"type": "noul", "noul": 0.4},
        "team": {"type": "choice", "choice": "network", "confidence": 0.2,
                 "probabilities": {"database": 0.3, "network": 0.5, "application": 0.2}},
        "severity": {"type": "score", "score": 1.0, "confidence": 0.1,
                     "legend": {"0": "low", "1": "medium", "2": "high"},
                     "probabilities": {"0": 0.25, "1": 0.5, "2": 0.25}},
    },
}  # fmt: skip


def _broken(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    body = copy.deepcopy(GOOD)
    target = body
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


def test_a_good_body_passes() -> None:
    assert problem(GOOD, QUESTIONS) is None


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("model",), KeyError, "model"),
        (("usage", "input_tokens"), 10.0, "usage"),
        (("answers", "page"), KeyError, "answers do not match"),
        (("answers", "page", "noul"), 1.5, "noul is not a probability"),
        (("answers", "team", "probabilities", "network"), 0.9, "sum to"),
        (("answers", "team", "choice"), "dns", "not one of the options"),
        (("answers", "team", "confidence"), KeyError, "confidence"),
        (("answers", "severity", "type"), "choice", "wrong answer type"),
        (
            ("answers", "severity", "probabilities"),
            {"low": 0.5, "medium": 0.25, "high": 0.25},
            "keyed 0..n-1",
        ),
    ],
)
def test_broken_bodies_are_named(path: tuple[str, ...], value: Any, message: str) -> None:
    assert message in (problem(_broken(path, value), QUESTIONS) or "")


def test_not_an_object() -> None:
    assert problem(["x"], QUESTIONS) == "body is not a JSON object"
