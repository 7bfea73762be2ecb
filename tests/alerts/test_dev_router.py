"""`make dev`'s alert router, on the session's local stack: a real Alertmanager delivery classified
within the router's default budget. A module of its own: the routing module's router retries its
classifications in the background until its module ends, and those reads would share the engine."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from devtools.harness.local_stack import LocalStack, wait_idle

DATA = Path(__file__).resolve().parents[1] / "data" / "alerts"

pytestmark = [pytest.mark.integration, pytest.mark.engine]


def test_the_dev_stack_runs_the_router(stack: LocalStack) -> None:
    """Each alert of a real delivery classified within the dev router's default budget (5 s): one
    alert per delivery, on an idle engine, since two at once on 2 CPU cores can miss it."""
    group = json.loads((DATA / "alertmanager_firing.json").read_text())
    for alert in group["alerts"]:
        assert wait_idle(stack.url)  # not behind this module's earlier alerts, still being read
        body = {**group, "alerts": [alert]}
        r = httpx.post(f"{stack.alerts_url}/v1/alerts/alertmanager", json=body, timeout=60)
        assert r.status_code == 200, r.text
        outcomes = r.json()["outcomes"]
        assert sum(outcomes.values()) == 1 and set(outcomes) <= {"page", "ticket", "drop"}, outcomes
