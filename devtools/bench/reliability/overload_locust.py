"""Locust users for the overload runs of `make reliability`: each sends one alert decision every
DGEMMA_OVERLOAD_PACE_S seconds (0: back to back) and gives up after DGEMMA_OVERLOAD_DEADLINE_S (the
SDK's 10 s). Every outcome is appended to DGEMMA_OVERLOAD_RECORDS as a JSON line: when it was sent,
how long it took, its status (0: no answer by the deadline), and for a 200 whether the body
validates. With pacing, the offered load is users / pace, whatever the service does.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from typing import Any

from locust import FastHttpUser, constant, constant_pacing, task

from loadtest.corpus import ALERTS, decision_body
from loadtest.validate import problem

PACE_S = float(os.environ.get("DGEMMA_OVERLOAD_PACE_S", "0"))
DEADLINE_S = float(os.environ.get("DGEMMA_OVERLOAD_DEADLINE_S", "10"))
KEY = os.environ.get("DGEMMA_OVERLOAD_KEY", "")
_records = open(os.environ.get("DGEMMA_OVERLOAD_RECORDS", os.devnull), "a", buffering=1)  # noqa: SIM115


class OverloadUser(FastHttpUser):
    wait_time = constant_pacing(PACE_S) if PACE_S else constant(0)
    network_timeout = DEADLINE_S
    connection_timeout = DEADLINE_S

    def on_start(self) -> None:
        alerts = ALERTS[:]
        random.Random(id(self)).shuffle(alerts)
        self._alerts = itertools.cycle(alerts)

    @task
    def decide(self) -> None:
        body = decision_body(next(self._alerts), "throughput", "single")
        sent = time.time()
        start = time.perf_counter()
        record: dict[str, Any] = {"sent": sent}
        with self.client.post(
            "/v1/systemone", json=body, headers={"authorization": f"Bearer {KEY}"}, catch_response=True
        ) as resp:
            record["seconds"] = time.perf_counter() - start
            record["status"] = resp.status_code or 0
            if resp.status_code == 200:
                try:
                    why = problem(resp.json(), body["questions"])
                except ValueError:
                    why = "body is not JSON"
                record["invalid"] = why
                if why:
                    resp.failure(why)
            elif resp.status_code in (429, 503):
                record["retry_after"] = resp.headers.get("retry-after")
                resp.success()  # shed as designed: counted apart, not a Locust failure
        _records.write(json.dumps(record) + "\n")
