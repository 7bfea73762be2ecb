"""Locust users for the gate: alert-classification decisions, every response body validated.

Run by `dgemma loadtest` (one Locust process per phase); the phase comes from the environment:
DGEMMA_LOADTEST_PHASE=latency (one question per request) or throughput (the three alert questions),
DGEMMA_LOADTEST_READ_POLICY (default single). Debug one user with `python loadtest/locustfile.py`.
"""

from __future__ import annotations

import itertools
import os
import random

from locust import FastHttpUser, constant, task

from loadtest.corpus import ALERTS, decision_body
from loadtest.validate import problem

PHASE = os.environ.get("DGEMMA_LOADTEST_PHASE", "throughput")
READ_POLICY = os.environ.get("DGEMMA_LOADTEST_READ_POLICY", "single")


class AlertDecisionUser(FastHttpUser):
    """A closed loop: the next decision as soon as the last one is answered."""

    wait_time = constant(0)

    def on_start(self) -> None:
        alerts = ALERTS[:]
        random.Random(id(self)).shuffle(alerts)
        self._alerts = itertools.cycle(alerts)
        self._headers = {"Authorization": f"Bearer {os.environ.get('DGEMMA_LOADTEST_KEY', 'loadtest')}"}

    @task
    def decide(self) -> None:
        body = decision_body(next(self._alerts), PHASE, READ_POLICY)
        with self.client.post(
            "/v1/systemone",
            json=body,
            headers=self._headers,
            name=f"systemone [{PHASE}]",
            catch_response=True,
        ) as resp:
            if resp.status_code != 200:
                resp.failure(f"HTTP {resp.status_code}: {(resp.text or '')[:200]}")
                return
            try:
                data = resp.json()
            except ValueError:
                resp.failure("body is not JSON")
                return
            why = problem(data, body["questions"])
            if why:
                resp.failure(why)


if __name__ == "__main__":
    from locust import run_single_user

    run_single_user(AlertDecisionUser)
