"""Errors only the real engine can produce: a stalled engine (SIGSTOP) is 503 with Retry-After, and
the gateway recovers when it resumes. The rest of the error contract is tested in process
(tests/gateway/test_contract.py)."""

from __future__ import annotations

import os
import signal

import httpx
import pytest

from app.core.polling import wait_http_ok
from devtools.harness.local_stack import LocalStack
from tests.helpers.gateway import NOUL, GatewayFactory, decision

pytestmark = [pytest.mark.integration, pytest.mark.engine]


def test_engine_stopped_mid_test_is_503_then_recovers(
    stack: LocalStack, gateway_factory: GatewayFactory
) -> None:
    url = gateway_factory(engine_timeout_s=3)
    body = decision(NOUL, read_policy={"mode": "single"})
    assert httpx.post(f"{url}/v1/systemone", json=body, timeout=60).status_code == 200
    engine_group = stack.engine_pid()  # the engine runs in a session of its own
    os.killpg(engine_group, signal.SIGSTOP)
    try:
        r = httpx.post(f"{url}/v1/systemone", json=body, timeout=60)
        assert r.status_code == 503 and "did not answer in time" in r.json()["detail"]
        assert int(r.headers["retry-after"]) > 0
        assert httpx.get(f"{url}/readyz", timeout=10).status_code == 503
    finally:
        os.killpg(engine_group, signal.SIGCONT)
    assert wait_http_ok(f"{url}/readyz", 30), "the engine did not come back"
    assert httpx.post(f"{url}/v1/systemone", json=body, timeout=60).status_code == 200


def test_a_state_longer_than_the_engines_context_is_a_400_marked_max_tokens_exceeded(
    client: httpx.Client,
) -> None:
    """vLLM's own refusal text, recognised by the gateway (app/gateway/engine.py `_TOO_LONG`): a client's
    mistake, never a 5xx."""
    body = decision(NOUL, state="disk full on db-1 " * 3000, read_policy={"mode": "single"})
    r = client.post("/v1/systemone", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error_type"] == "max_tokens_exceeded" and "Input too long" in r.json()["detail"]
