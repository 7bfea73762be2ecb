"""The alert router's rig, for its end-to-end tests and its benchmark: the router as a real process
(`dgemma alerts serve`), loopback receivers standing in for PagerDuty's Events API and a webhook,
and a proxy in front of the gateway that can play a starting, failed or slow decision service.

The receivers and the proxy are `devtools.harness.loopback.serve` servers: real HTTP on loopback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.core.net import free_port
from app.core.polling import wait_http_ok
from devtools.harness.local_stack import ROOT, stop
from devtools.harness.loopback import Reply, Seen, json_reply

ROUTING_KEY = "R0UTINGKEY0123456789012345678901"

# Every threshold 0: whatever the model answers, the alert pages (the tiny model's answers mean
# nothing; what the rig measures and the tests check is the delivery, never the classification).
POLICY = """
fallback_route = "oncall"

[thresholds]
page = 0.0
uncertain = 0.0
ticket = 0.0
team_confidence = 0.0

[questions]
page = "Should the on-call engineer be woken up now for this alert?"
team = "Which team owns the system this alert is about?"
severity = "How severe is this alert for users right now?"

[severity]
levels = ["info", "warning", "error", "critical"]

[teams.database]
description = "databases"
route = "teams"

[teams.network]
description = "networks"
route = "teams"

[routes.teams]
page = ["pagerduty", "audit"]

[routes.oncall]
page = ["pagerduty", "audit"]

[sinks.pagerduty]
type = "pagerduty"
routing_key_file = "pagerduty.key"
url = "{pagerduty}/v2/enqueue"
attempts = 2
backoff_s = 0.05

[sinks.audit]
type = "webhook"
url = "{audit}/pages"
attempts = 1
"""


def write_policy(root: Path, pagerduty_url: str, audit_url: str, text: str = POLICY) -> Path:
    """The rig's policy (or `text`, of the same sinks), and the PagerDuty key file beside it, under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pagerduty.key").write_text(ROUTING_KEY + "\n")
    policy = root / "policy.toml"
    policy.write_text(text.replace("{pagerduty}", pagerduty_url).replace("{audit}", audit_url))
    return policy


@dataclass
class Receiver:
    """Answers `statuses` in turn, then `ok`; keeps the JSON bodies it accepted (2xx) with the time
    each came (`time.monotonic()`)."""

    ok: int = 202
    statuses: list[int] = field(default_factory=list)
    accepted: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, seen: Seen) -> Reply:
        with self.lock:
            status = self.statuses.pop(0) if self.statuses else self.ok
            if status < 300:
                self.accepted.append(json.loads(seen.body))
                self.arrivals.append(time.monotonic())
        return json_reply(status, {"status": "success" if status < 300 else "error"})

    def about(self, key: str) -> list[dict[str, Any]]:
        """Accepted deliveries about the alert `key` (PagerDuty's and the webhook's `dedup_key`)."""
        with self.lock:
            return [b for b in self.accepted if b.get("dedup_key") == key]

    def arrival(self, key: str) -> float | None:
        """When the first delivery about `key` was accepted."""
        with self.lock:
            return next(
                (t for b, t in zip(self.accepted, self.arrivals, strict=True) if b.get("dedup_key") == key),
                None,
            )


@dataclass
class Proxy:
    """The gateway as the router reaches it: passes through (after `delay_s`), or answers 503 as a
    starting or failed service does when `down`; records each request's headers."""

    target: str
    down: bool = False
    delay_s: float = 0.0
    headers: list[dict[str, str]] = field(default_factory=list)
    in_flight: int = 0  # requests being answered (a forwarded one outlives a client that gave up)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, seen: Seen) -> Reply:
        with self.lock:
            self.in_flight += 1
        try:
            return self._answer(seen)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _answer(self, seen: Seen) -> Reply:
        self.headers.append(seen.headers)
        if self.down:
            return json_reply(503, {"detail": "The engine is starting."}, {"retry-after": "1"})
        if self.delay_s and seen.path == "/v1/systemone":
            time.sleep(self.delay_s)
        forwarded = {k: v for k, v in seen.headers.items() if k in ("authorization", "content-type")}
        try:
            r = httpx.request(
                seen.method, self.target + seen.path, content=seen.body, headers=forwarded, timeout=120
            )
        except httpx.HTTPError as e:  # the gateway is gone (a run ending): what Cloud Run's front end says
            return json_reply(502, {"detail": f"upstream: {type(e).__name__}"})
        return r.status_code, {"content-type": r.headers.get("content-type", "application/json")}, r.content


@dataclass
class RouterProcess:
    url: str
    proc: subprocess.Popen[bytes]
    port: int

    def kill(self) -> None:
        """SIGKILL: the process dies at once, mid-work (a crash, an instance reclaimed)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@contextmanager
def router(
    log: Path, policy: Path, gateway_url: str, *, port: int | None = None, **env: str
) -> Iterator[RouterProcess]:
    """`dgemma alerts serve` on `port` (a free one by default) with this policy and gateway (`env`:
    more settings, or GCE_METADATA_HOST for ID tokens) until the block ends. RuntimeError with its
    log if it does not become ready."""
    port = port or free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DGEMMA_") and k != "PORT"}
    settings = {
        "DGEMMA_ALERTS_PORT": str(port),
        "DGEMMA_ALERTS_POLICY_FILE": str(policy),
        "DGEMMA_ALERTS_GATEWAY_URL": gateway_url,
        "DGEMMA_LOG_LEVEL": "INFO",
    }
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deploy.cli", "alerts", "serve"],
            cwd=ROOT,
            env={**clean, **settings, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        if not wait_http_ok(f"{url}/readyz", 30, abort=lambda: proc.poll() is not None):
            raise RuntimeError(f"the router did not start:\n{log.read_text(errors='replace')[-4000:]}")
        yield RouterProcess(url, proc, port)
    finally:
        stop(proc)


@contextmanager
def router_process(log: Path, policy: Path, gateway_url: str, **env: str) -> Iterator[str]:
    """`router`, yielding its URL."""
    with router(log, policy, gateway_url, port=None, **env) as proc:
        yield proc.url
