"""Request builders shared by the tests."""

from __future__ import annotations

from typing import Any


def decision(
    questions: dict[str, Any], state: Any = "Disk usage at 97% on db-1", **extra: Any
) -> dict[str, Any]:
    return {"model": "jev-latest", "state": state, "questions": questions, **extra}


ALERT_QUESTIONS: dict[str, Any] = {
    "page": {"type": "noul", "instructions": "Should on-call be paged?"},
    "team": {"type": "choice", "criteria": {"db": None, "network": None, "app": None}},
    "severity": {"type": "score", "criteria": ["low", "medium", "high"]},
}
