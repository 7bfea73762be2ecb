"""Probes of the running stack (metrics and logs are tested in process:
tests/gateway/test_observability_in_process.py, tests/core/test_logs.py)."""

from __future__ import annotations

import httpx
import pytest

from devtools.harness.local_stack import LocalStack

pytestmark = [pytest.mark.integration, pytest.mark.engine]


def test_probes(stack: LocalStack) -> None:
    assert httpx.get(f"{stack.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{stack.url}/readyz").json() == {"status": "ready"}
    assert "dgemma_decision_seconds" in httpx.get(f"{stack.url}/metrics").text
