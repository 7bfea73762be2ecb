"""Alert-classification requests: the shipped alert corpus and the three default questions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ALERTS: list[dict[str, Any]] = [
    json.loads(line) for line in (Path(__file__).parent / "data" / "alerts.jsonl").read_text().splitlines()
]
QUESTIONS: dict[str, dict[str, Any]] = {
    "page": {"type": "noul", "instructions": "Should the on-call engineer be paged now?"},
    "team": {
        "type": "choice",
        "instructions": "Which team owns this alert?",
        "criteria": {
            "database": "Postgres, replication, backups",
            "network": "DNS, load balancers, packet loss",
            "application": "services, pods, error rates, latency",
        },
    },
    "severity": {"type": "score", "instructions": "How severe is it?", "criteria": ["low", "medium", "high"]},
}


def decision_body(alert: dict[str, Any], phase: str, read_policy: str = "single") -> dict[str, Any]:
    """A Jev request: one question in the latency phase, the three alert questions otherwise."""
    questions = {"page": QUESTIONS["page"]} if phase == "latency" else QUESTIONS
    return {
        "model": "jev-latest",
        "state": alert,
        "questions": questions,
        "read_policy": {"mode": read_policy},
    }
