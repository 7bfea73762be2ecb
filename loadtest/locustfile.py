"""Locust users for the gate: alert-classification decisions, every response body validated.

Run by `dgemma loadtest` (one Locust process per phase) with `--phase latency` (one question per
request) or `--phase throughput` (the three alert questions) and `--read-policy`; the headers come
from the gate's settings (DGEMMA_LOADTEST_HEADERS, which the gate sets: the API key and any ID token;
else DGEMMA_LOADTEST_API_KEY). Debug one user with `python loadtest/locustfile.py`.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from locust import FastHttpUser, constant, events, task

from loadtest.corpus import ALERTS, decision_body
from loadtest.settings import LoadtestSettings
from loadtest.validate import problem


def _arguments(parser: Any) -> None:
    parser.add_argument("--phase", choices=["latency", "throughput"], default="throughput")
    parser.add_argument("--read-policy", choices=["single", "adaptive", "debias"], default="single")


events.init_command_line_parser.add_listener(_arguments)  # type: ignore[no-untyped-call]


class AlertDecisionUser(FastHttpUser):
    """A closed loop: the next decision as soon as the last one is answered."""

    wait_time = constant(0)

    def on_start(self) -> None:
        alerts = ALERTS[:]
        random.Random(id(self)).shuffle(alerts)
        self._alerts = itertools.cycle(alerts)
        self._headers = LoadtestSettings().headers()
        options = self.environment.parsed_options
        self._phase = getattr(options, "phase", "throughput")
        self._read_policy = getattr(options, "read_policy", "single")

    @task
    def decide(self) -> None:
        body = decision_body(next(self._alerts), self._phase, self._read_policy)
        with self.client.post(
            "/v1/systemone",
            json=body,
            headers=self._headers,
            name=f"systemone [{self._phase}]",
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
