"""The alert router with its ledger's store failing, every part a real process or server: router
processes (`dgemma alerts serve`) sharing one ledger on the GCS emulator (fake-gcs-server) reached
through a loopback fault proxy, the decision service down (its proxy answers 503: every page is a
fallback page, as in the outage the issue saw), and a PagerDuty-shaped receiver. Used by the tests
(tests/alerts/test_ledger_outage.py) and `make bench-ledger`.

A burst sends new alerts, each to every router at once (as an Alertmanager pair does), and measures
per alert: what each sender saw (status, seconds), when the first page arrived, and how many came.
The store's states: `healthy`, `stopped` (the emulator stopped, its port refusing), `hanging` (the
proxy accepts and never answers), `slow` (the proxy adds `SLOW_S` to each request), `returns` (stopped
for the first half of the burst, started again in the middle).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from app.core.polling import wait_until
from devtools.bench.alerts import delivery, key_of
from devtools.harness.alertrig import POLICY, Proxy, Receiver, router, write_policy
from devtools.harness.faultproxy import FaultProxy, fault_proxy
from devtools.harness.gcs import FakeGcs, fake_gcs_server
from devtools.harness.loopback import serve
from loadtest.overhead import percentile

State = Literal["healthy", "stopped", "hanging", "slow", "returns"]
STATES: tuple[State, ...] = ("healthy", "stopped", "hanging", "slow", "returns")
SLOW_S = 2.0  # per request: a new alert's ~6 calls would take 12 s


@dataclass
class Trial:
    key: str
    payload: dict[str, Any]
    sent: float  # time.monotonic() of the first send
    answers: list[tuple[int, float]] = field(default_factory=list)  # per router: status, seconds
    pages: int = 0
    first_page_s: float | None = None


@dataclass
class Burst:
    state: State
    trials: list[Trial]

    @property
    def page_s(self) -> list[float]:
        return [t.first_page_s for t in self.trials if t.first_page_s is not None]

    @property
    def lost(self) -> int:
        return sum(t.pages == 0 for t in self.trials)

    @property
    def duplicates(self) -> int:
        return sum(max(0, t.pages - 1) for t in self.trials)

    @property
    def answer_s(self) -> list[float]:
        return [s for t in self.trials for _, s in t.answers]

    @property
    def statuses(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for t in self.trials:
            for status, _ in t.answers:
                out[status] = out.get(status, 0) + 1
        return out

    def line(self) -> str:
        p, a = self.page_s, self.answer_s
        return (
            f"{self.state}: {len(self.trials)} alerts, page p50 {percentile(p, 50):.2f} s max "
            f"{max(p, default=float('nan')):.2f} s, lost {self.lost}, duplicates {self.duplicates}, "
            f"senders saw {self.statuses} in p50 {percentile(a, 50):.2f} s max {max(a):.2f} s"
        )


@dataclass
class OutageRig:
    root: Path
    gcs: FakeGcs
    proxy: FaultProxy
    pd: Receiver
    routers: list[str]

    def fault(self, state: State) -> None:
        """Put the store in `state` (`returns` starts stopped)."""
        if state in ("stopped", "returns"):
            self.proxy.set("refuse")
            self.gcs.stop()
        elif state == "hanging":
            self.proxy.set("hang")
        elif state == "slow":
            self.proxy.set("slow", SLOW_S)

    def heal(self) -> None:
        """The store answers again; wait until every router writes to it again."""
        if not self._gcs_up():
            self.gcs.start()
        self.proxy.set("pass")
        if not wait_until(self.all_up, 30, interval_s=0.2):
            raise RuntimeError("the routers did not return to the store within 30 s")

    def _gcs_up(self) -> bool:
        try:
            return httpx.get(f"{self.gcs.url}/storage/v1/b", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def all_up(self) -> bool:
        return all(metric(url, "dgemma_alerts_ledger_up") == 1 for url in self.routers)

    def burst(self, state: State, n: int, *, spacing_s: float = 0.25, settle_s: float = 3.0) -> Burst:
        """`n` new alerts, each to every router at once, `spacing_s` apart, with the store in
        `state`; then the store healed. The trial ends `settle_s` after the last page (duplicates)."""
        tag = f"{state}-{time.monotonic_ns()}"
        self.fault(state)
        try:
            trials = self._send([delivery(i, tag) for i in range(n)], spacing_s, settle_s, state == "returns")
        finally:
            self.heal()
        return Burst(state, trials)

    def resend(self, burst: Burst, settle_s: float = 1.0) -> Burst:
        """The burst's alerts once more, to every router (a sender's repeat), the store as it is."""
        return Burst(burst.state, self._send([t.payload for t in burst.trials], 0.0, settle_s, False))

    def _send(
        self, payloads: list[dict[str, Any]], spacing_s: float, settle_s: float, returning: bool
    ) -> list[Trial]:
        trials: list[Trial] = []
        lock = threading.Lock()

        def send(trial: Trial, url: str) -> None:
            started = time.monotonic()
            try:
                r = httpx.post(f"{url}/v1/alerts/alertmanager", json=trial.payload, timeout=60)
                status = r.status_code
            except httpx.HTTPError:
                status = 0  # what a sender with a 60 s timeout sees as a failure
            with lock:
                trial.answers.append((status, time.monotonic() - started))

        with ThreadPoolExecutor(8 * len(self.routers)) as pool:
            for i, payload in enumerate(payloads):
                if returning and i == len(payloads) // 2:  # the store comes back mid-burst
                    self.gcs.start()
                    self.proxy.set("pass")
                trial = Trial(key_of(payload), payload, time.monotonic())
                trials.append(trial)
                for url in self.routers:
                    pool.submit(send, trial, url)
                time.sleep(spacing_s)
        wait_until(lambda: all(self.pages(t.key) for t in trials), 30, interval_s=0.05)
        time.sleep(settle_s)
        for t in trials:
            arrived = self.pd.arrival(t.key)
            t.first_page_s = None if arrived is None else arrived - t.sent
            t.pages = self.pages(t.key)
        return trials

    def pages(self, key: str) -> int:
        """Pages (PagerDuty triggers) about the alert `key` so far."""
        return sum(b.get("event_action") == "trigger" for b in self.pd.about(key))


def metric(url: str, name: str) -> float | None:
    """One unlabelled sample of a router's /metrics."""
    try:
        text = httpx.get(f"{url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


@contextmanager
def outage_rig(root: Path, routers: int = 2, **env: str) -> Iterator[OutageRig]:
    """The emulator (bucket `ledger`), its fault proxy, the receivers, a down decision service and
    `routers` router processes sharing a ledger, until the block ends."""
    with ExitStack() as stack:
        gcs = stack.enter_context(fake_gcs_server(root / "gcs"))
        proxy = stack.enter_context(fault_proxy(gcs.port))
        httpx.post(f"{gcs.url}/storage/v1/b?project=local", json={"name": "ledger"}, timeout=10)
        pd, hook = Receiver(), Receiver(ok=200)
        pd_url = stack.enter_context(serve(pd.answer)).url
        hook_url = stack.enter_context(serve(hook.answer)).url
        service = Proxy("http://127.0.0.1:9", down=True)  # never forwarded to: it is down
        gateway_url = stack.enter_context(serve(service.answer)).url
        policy = write_policy(root / "policy", pd_url, hook_url, POLICY)
        common = {
            "DGEMMA_ALERTS_ALLOW_OPEN_SENDERS": "true",
            "DGEMMA_ALERTS_GATEWAY_API_KEY": "rig",
            "DGEMMA_ALERTS_LEDGER_URL": f"gs://ledger/outage-{time.time_ns()}",
            "STORAGE_EMULATOR_HOST": proxy.url,
            **env,
        }
        urls = [
            stack.enter_context(
                router(root / f"router-{i}.log", policy, gateway_url, port=None, **common)
            ).url
            for i in range(routers)
        ]
        rig = OutageRig(root, gcs, proxy, pd, urls)
        if not wait_until(rig.all_up, 30, interval_s=0.2):
            raise RuntimeError("the routers' ledger is not up")
        yield rig
