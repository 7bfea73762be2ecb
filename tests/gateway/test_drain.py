"""SIGTERM on a real gateway process (`dgemma serve`) under load, with a slow stand-in of vLLM (2 s a
decision, so decisions are in flight when the signal comes): started decisions finish, new ones get
503 with Retry-After at once, /readyz says so, and the process ends within its drain budget."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from devtools.harness.local_stack import gateway, instant_engine
from tests.helpers.gateway import NOUL, decision

pytestmark = pytest.mark.integration

DRAIN_S = 6


def test_sigterm_finishes_started_decisions_and_turns_new_ones_away(tmp_path: Path) -> None:
    with (
        instant_engine(tmp_path / "engine.log", delay_s=2.0) as engine,
        gateway(
            engine.url,
            tmp_path / "gateway.log",
            env={"DGEMMA_ALLOW_ANY_KEY": "true", "DGEMMA_RETRY_AFTER_S": "3"},
            extra_args=["--drain-seconds", str(DRAIN_S)],
        ) as gw,
        httpx.Client(base_url=gw.url, headers={"authorization": "Bearer t"}, timeout=30) as client,
        ThreadPoolExecutor(4) as pool,
    ):
        body = decision(NOUL, read_policy={"mode": "single"})
        started = [pool.submit(client.post, "/v1/systemone", json=body) for _ in range(4)]
        time.sleep(0.5)  # all four are reading the slow engine now
        sigterm_at = time.monotonic()
        gw.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # the next tick of the server's loop starts the drain

        new = client.post("/v1/systemone", json=body)
        assert new.status_code == 503, new.text
        assert new.headers["retry-after"] == "3" and "shutting down" in new.json()["detail"]
        assert time.monotonic() - sigterm_at < 1.5, "turned away at once, not after the drain"
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "shutting down" in ready.json()["detail"]

        assert [f.result().status_code for f in started] == [200] * 4
        code = gw.proc.wait(timeout=DRAIN_S + 5)
        stopped_in = time.monotonic() - sigterm_at
    assert code == 0
    assert stopped_in < 2.0 + 1.5, f"stopped {stopped_in:.1f} s after SIGTERM: once idle, not at the budget"
    assert '"draining: new requests get 503' in gw.log.read_text()
