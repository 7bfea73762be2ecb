"""Locust users for the gate: alert-classification decisions, every response body validated.

Run by `dgemma loadtest` (one Locust process per phase) with `--phase latency` (one question per
request) or `--phase throughput` (the three alert questions) and `--read-policy`; the headers come
from the gate's settings (DGEMMA_LOADTEST_HEADERS, which the gate sets: the API key and any ID token;
else DGEMMA_LOADTEST_API_KEY). Debug one user with `python loadtest/locustfile.py`.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

from locust import FastHttpUser, constant, events, task

from loadtest.corpus import ALERTS, decision_body
from loadtest.settings import LoadtestSettings
from loadtest.validate import problem


def _arguments(parser: Any) -> None:
    parser.add_argument("--phase", choices=["latency", "throughput"], default="throughput")
    parser.add_argument("--read-policy", choices=["single", "adaptive", "debias"], default="single")
    parser.add_argument("--figures", default="", help="write the run's final figures here (JSON)")


events.init_command_line_parser.add_listener(_arguments)  # type: ignore[no-untyped-call]


@events.test_stop.add_listener  # type: ignore[untyped-decorator]
def _final_figures(environment: Any, **_: Any) -> None:
    """The run's figures once every user has stopped. Locust writes its stats CSV each second and
    not at the end, so the last write misses up to the run's last second (a 2 s run: 23 of 38
    requests), and a short run on a loaded machine may show none."""
    path = getattr(environment.parsed_options, "figures", "")
    if not path:
        return
    total = environment.stats.total
    answered = total.num_requests > 0
    figures = {
        "requests": total.num_requests,
        "failures": total.num_failures,
        "p50_ms": total.get_response_time_percentile(0.5) if answered else None,
        "p95_ms": total.get_response_time_percentile(0.95) if answered else None,
        "rps": total.total_rps,
        "exceptions": [f"{e['count']}x {e['msg']}" for e in environment.runner.exceptions.values()],
    }
    Path(path).write_text(json.dumps(figures))


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
