"""Faults under load, measured: a slow engine (a delaying proxy), the engine killed, SIGTERM. A
closed-loop load of a few workers runs throughout; every request's start, end and outcome are kept.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.core.net import free_port
from app.core.polling import wait_until
from devtools.harness.local_stack import LocalStack, service
from loadtest.corpus import ALERTS, decision_body


@dataclass(frozen=True)
class Outcome:
    started: float  # time.monotonic()
    ended: float
    status: int  # 0: no HTTP answer (connection refused or reset, timeout)
    error: str = ""
    retry_after: str | None = None


class Load:
    """`workers` threads sending alert decisions back to back to `url` until stopped."""

    def __init__(self, url: str, key: str, workers: int, timeout_s: float = 30) -> None:
        self.outcomes: list[Outcome] = []
        self._stop = threading.Event()
        self._url, self._key, self._timeout = url, key, timeout_s
        self._threads = [threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(workers)]

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=self._timeout + 5)

    def _work(self, worker: int) -> None:
        headers = {"authorization": f"Bearer {self._key}"}
        with httpx.Client(timeout=self._timeout, headers=headers) as http:
            i = worker
            while not self._stop.is_set():
                body = decision_body(ALERTS[i % len(ALERTS)], "throughput", "single")
                i += 7
                started = time.monotonic()
                try:
                    r = http.post(f"{self._url}/v1/systemone", json=body)
                    out = Outcome(
                        started, time.monotonic(), r.status_code, retry_after=r.headers.get("retry-after")
                    )
                except httpx.HTTPError as e:
                    out = Outcome(started, time.monotonic(), 0, error=type(e).__name__)
                    time.sleep(0.05)  # a refused port answers at once: do not spin
                self.outcomes.append(out)


def _statuses(outcomes: list[Outcome]) -> dict[str, int]:
    return dict(Counter(str(o.status) if o.status else o.error for o in outcomes).most_common())


def first_poll(check: Any, timeout_s: float, interval_s: float = 0.02) -> float | None:
    """Seconds until `check()` is true (None if never within `timeout_s`)."""
    start = time.monotonic()
    if wait_until(check, timeout_s, interval_s=interval_s, errors=(httpx.HTTPError,)) is None:
        return None
    return time.monotonic() - start


def _ready_code(url: str) -> int:
    try:
        return httpx.get(f"{url}/readyz", timeout=5).status_code
    except httpx.HTTPError:
        return 0


# -- a slow engine ------------------------------------------------------------------------------


@contextmanager
def slow_proxy(upstream: str, delay_s: float, log: Path) -> Iterator[str]:
    port = free_port()
    args = ["-m", "devtools.bench.reliability.slowproxy", "--port", str(port), "--upstream", upstream,
            "--delay-s", str(delay_s)]  # fmt: skip
    with service(args, log, None, port=port) as proxy:
        yield proxy.url


def slow_engine(
    gateway_url: str, key: str, *, engine_timeout_s: float, requests: int, deadline_s: float = 10
) -> dict[str, Any]:
    """`requests` decisions at once through a gateway whose engine answers later than its timeout:
    each must get a 503 with Retry-After before the client's deadline (those beyond the admission
    capacity wait their turn, then time out in theirs)."""
    results: list[Outcome] = []

    def one(i: int) -> None:
        body = decision_body(ALERTS[i % len(ALERTS)], "throughput", "single")
        started = time.monotonic()
        try:
            r = httpx.post(
                f"{gateway_url}/v1/systemone",
                json=body,
                headers={"authorization": f"Bearer {key}"},
                timeout=60,
            )
            results.append(
                Outcome(started, time.monotonic(), r.status_code, retry_after=r.headers.get("retry-after"))
            )
        except httpx.HTTPError as e:
            results.append(Outcome(started, time.monotonic(), 0, error=type(e).__name__))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = [o.ended - o.started for o in results]
    return {
        "engine_timeout_s": engine_timeout_s,
        "requests": requests,
        "statuses": _statuses(results),
        "with_retry_after": sum(1 for o in results if o.retry_after),
        "slowest_s": round(max(seconds), 2),
        "fastest_s": round(min(seconds), 2),
        "readyz": _ready_code(gateway_url),
        "deadline_s": deadline_s,
        "ok": all(o.status == 503 and o.retry_after for o in results) and max(seconds) < deadline_s,
    }


# -- the engine killed, SIGTERM: on the supervisor's stack ---------------------------------------------


def engine_killed(stack: LocalStack, key: str, workers: int = 4, warm_s: float = 5) -> dict[str, Any]:
    """SIGKILL the engine under load: the first error answer, /readyz, the supervisor's exit."""
    engine_group = stack.engine_pid()
    with Load(stack.url, key, workers) as load:
        time.sleep(warm_s)
        killed = time.monotonic()
        os.killpg(engine_group, signal.SIGKILL)
        not_ready_after = first_poll(lambda: _ready_code(stack.url) != 200, 30)
        exited_after = first_poll(lambda: stack.proc.poll() is not None, 60, 0.05)
        time.sleep(0.5)
    before = [o for o in load.outcomes if o.ended < killed]
    in_flight = [o for o in load.outcomes if o.started < killed <= o.ended]
    after = [o for o in load.outcomes if o.started >= killed]
    errors = sorted(o.ended - killed for o in in_flight + after if o.status != 200)
    return {
        "workers": workers,
        "answered_before": _statuses(before),
        "in_flight_at_kill": _statuses(in_flight),
        "in_flight_slowest_s": round(max((o.ended - killed for o in in_flight), default=0.0), 2),
        "sent_after": _statuses(after),
        "first_error_after_s": round(errors[0], 3) if errors else None,
        "readyz_not_ready_after_s": None if not_ready_after is None else round(not_ready_after, 3),
        "supervisor_exit_code": stack.proc.poll(),
        "supervisor_exited_after_s": None if exited_after is None else round(exited_after, 2),
        "ok": bool(in_flight or after)
        and all(o.status in (0, 502, 503) for o in in_flight + after)
        and (stack.proc.poll() or 0) != 0,
    }


def sigterm(
    stack: LocalStack, key: str, grace_s: float, workers: int = 4, warm_s: float = 5
) -> dict[str, Any]:
    """SIGTERM the supervisor under load, as Cloud Run does: what was started, what came after."""
    with Load(stack.url, key, workers) as load:
        time.sleep(warm_s)
        signalled = time.monotonic()
        stack.proc.send_signal(signal.SIGTERM)
        not_ready_after = first_poll(lambda: _ready_code(stack.url) != 200, grace_s + 5)
        exited_after = first_poll(lambda: stack.proc.poll() is not None, grace_s + 10, 0.05)
        time.sleep(0.5)
    in_flight = [o for o in load.outcomes if o.started < signalled <= o.ended]
    after = [o for o in load.outcomes if o.started >= signalled]
    refused_from = min((o.started - signalled for o in after if o.status == 0), default=None)
    answered_503 = [o for o in after if o.status == 503]
    return {
        "workers": workers,
        "grace_s": grace_s,
        "in_flight_at_sigterm": _statuses(in_flight),
        "in_flight_finished_within_s": round(max((o.ended - signalled for o in in_flight), default=0.0), 2),
        "sent_after": _statuses(after),
        "sent_after_503_with_retry_after": sum(1 for o in answered_503 if o.retry_after),
        "first_refused_connection_after_s": None if refused_from is None else round(refused_from, 2),
        "readyz_not_ready_after_s": None if not_ready_after is None else round(not_ready_after, 3),
        "supervisor_exit_code": stack.proc.poll(),
        "exited_after_s": None if exited_after is None else round(exited_after, 2),
        "ok": all(o.status == 200 for o in in_flight)
        and all(o.status in (0, 200, 503) for o in after)
        and stack.proc.poll() == 0
        and exited_after is not None
        and exited_after <= grace_s + 1,
    }
