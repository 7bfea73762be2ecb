"""The router's core: alerts in, pages out; never lose a page, never page twice, never decide
without a record (app/alerts/audit.py).

For each firing alert of a delivery, with bounded concurrency:
- a rule that never classifies: its action, without asking the model;
- classified within the decision budget: the policy's page / ticket / drop on the team's route;
- not within the budget, or the decision service not ready: the page goes out at once, unclassified,
  on the fallback route; a background task wakes the service (a readiness call starts a
  scaled-to-zero instance), classifies the alert when it can, and updates the same deliveries (the
  same PagerDuty incident: the same `dedup_key`) with the classification.
A resolved alert needs no read: the sinks that got its page get its resolution.

In shadow mode every firing alert pages as it was sent (the fallback route, the sender's severity),
and the policy's decision is only recorded: what it would have done.

The ledger (app/alerts/ledger.py) keeps, per alert episode, the page chosen and what each sink
already got, in a store every router process may share (Cloud Storage): whichever process decides
first, its page is the one delivered, once per sink; a sink that fails makes the whole delivery
answer 502 so the sender retries (here or at another instance), and the retry delivers only what is
missing. A fallback page waiting for its classification is listed there too, and whichever process
runs next takes it over: at start, on each delivery, and every `scan_s`.

Every store call of a delivery answers by the delivery's deadline (its arrival, plus the decision
budget, plus `ledger_timeout_s`: a `Deadline`, passed to that alert's calls), the classification by
the budget: when the store does not answer in time, the alert is routed from this process's memory
(app/alerts/store.py `FailoverStore`; its calls say so, `Scope.served`), and what it decided reaches
the store once it answers again.

`Triage` composes the stages: classify, decide and choose (app/alerts/stages.py), the fan-out to the
sinks (app/alerts/fanout.py) and the late path of a fallback page (app/alerts/late.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from app.alerts.audit import AuditLog, Mode
from app.alerts.errors import DeliveryFailed
from app.alerts.fanout import Fanout
from app.alerts.late import LatePath
from app.alerts.ledger import RESOLVED, Ledger, keep_in_memory
from app.alerts.metrics import RouterMetrics
from app.alerts.policy import Policy
from app.alerts.records import Alert
from app.alerts.sinks import Sink
from app.alerts.stages import Choose, Classify, Context, Decide, KeyedLocks, Record, Shadow
from app.alerts.store import Deadline, FailoverStore, ObjectStore
from app.core.backoff import Backoff
from app.jev.client import JevClient

log = logging.getLogger("app.alerts")


class Triage:
    def __init__(
        self,
        policy: Policy,
        gateway: JevClient,
        sinks: dict[str, Sink],
        metrics: RouterMetrics,
        *,
        budget_s: float,
        reclassify_for_s: float,
        max_concurrency: int,
        audit: AuditLog | None = None,
        mode: Mode = "act",
        store: ObjectStore | None = None,
        claim_s: float = 60.0,
        ledger_timeout_s: float = 1.0,
        scan_s: float = 30.0,
        heartbeats: frozenset[str] = frozenset(),
    ) -> None:
        self.ctx = ctx = Context(policy, metrics, audit or AuditLog(), mode)
        self.audit, self.gateway, self.metrics = ctx.audit, gateway, metrics
        self.budget_s = budget_s
        self.ledger_timeout_s = ledger_timeout_s
        self.max_concurrency = max_concurrency
        self.heartbeats = heartbeats
        # The shared store (None: this process's memory alone) with memory behind it: when the store
        # does not answer, alerts are paged from memory (perhaps once more by another instance)
        # rather than held back. The ledger says what memory keeps.
        self.store = FailoverStore(store, metrics, timeout_s=ledger_timeout_s, keep=keep_in_memory)
        self.ledger = Ledger(self.store, claim_s=claim_s)
        self._locks = KeyedLocks()
        record, classify = Record(ctx), Classify(ctx, gateway, budget_s)
        self.decide = Decide(ctx, classify)
        self.fanout = Fanout(ctx, sinks, self.ledger, record)
        self.late = LatePath(
            ctx,
            self.ledger,
            self._locks,
            classify,
            record,
            self.fanout.deliver,
            reclassify_for_s=reclassify_for_s,
            scan_s=scan_s,
            backoff=Backoff(2.0, 60.0),  # between classification attempts
        )
        self.choose = Choose(ctx, record, self.fanout.deliver, self.late.pend)
        self.shadow = Shadow(ctx, self.decide, record, self.fanout.deliver)
        self._later = self.late.tasks  # alert key -> its pending classification
        self._scan = self.late.scan
        self._recovery: asyncio.Task[None] | None = None

    @property
    def policy(self) -> Policy:
        return self.ctx.policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self.ctx.policy = policy

    @property
    def retry_base_s(self) -> float:
        """The first wait between late classification attempts (doubled each time, to 60 s)."""
        return self.late.backoff.base_s

    @retry_base_s.setter
    def retry_base_s(self, base_s: float) -> None:
        self.late.backoff = Backoff(base_s, self.late.backoff.cap_s)

    async def start(self) -> None:
        """Take over the pending classifications other processes left, now and every `scan_s`;
        while the ledger's store is away, try it again every `store.retry_s`."""
        self.late.start()
        if self.store.shared is not None:
            self._recovery = asyncio.create_task(self.store.recover_forever())

    async def aclose(self) -> None:
        await self.fanout.drain()  # let releases land
        if self._recovery is not None:
            self._recovery.cancel()
        await self.late.aclose()
        if self._recovery is not None:
            await asyncio.gather(self._recovery, return_exceptions=True)
        if self.store.backlog:  # a last try within the shutdown's grace
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.store.recover(), 5.0)
            if self.store.backlog:
                log.error(
                    "%d ledger facts kept in memory were never written (the store is away): another "
                    "instance may page those alerts once more",
                    len(self.store.backlog),
                )

    async def handle(self, alerts: list[Alert]) -> dict[str, int]:
        """Route one delivery's alerts; the outcome counts. Raises DeliveryFailed (502) when a sink
        failed, after trying every alert, so the sender retries the delivery."""
        self.late.scan_soon()
        gate = asyncio.Semaphore(self.max_concurrency)
        arrived = time.monotonic()
        until = arrived + self.budget_s
        # The store's calls for this delivery answer by its deadline.
        deadline = Deadline(until + self.ledger_timeout_s)
        results = await asyncio.gather(
            *(self._one(a, gate, until, deadline) for a in alerts), return_exceptions=True
        )
        counts: dict[str, int] = {}
        failures = []
        for alert, result in zip(alerts, results, strict=True):
            if isinstance(result, DeliveryFailed):
                failures.append(f"{alert.key}: {result}")
            elif isinstance(result, BaseException):
                raise result
            else:
                counts[result] = counts.get(result, 0) + 1
        if failures:
            raise DeliveryFailed("a sink failed; deliver again: " + "; ".join(failures)[:2000])
        return counts

    async def _one(self, alert: Alert, gate: asyncio.Semaphore, until: float, deadline: Deadline) -> str:
        """Route one alert, classified by `until`, its store calls answered by `deadline`."""
        self.metrics.received.labels(alert.source, alert.status).inc()
        if alert.title in self.heartbeats:  # the dead-man's switch's signal, not an incident
            self.metrics.heartbeats.labels(alert.source).inc()
            self.metrics.heartbeat_at.labels(alert.source).set_to_current_time()
            return "heartbeat"
        calls = self.store.within(deadline)
        async with self._locks(alert.key):
            outcome = await self._route(alert, self.ledger.over(calls), gate, until)
        if calls.served:
            self.metrics.from_memory.labels(outcome).inc()
            log.warning("%s routed from this process's memory (the ledger's store is away): %s",
                        alert.key, outcome)  # fmt: skip
        return outcome

    async def _route(self, alert: Alert, ledger: Ledger, gate: asyncio.Semaphore, until: float) -> str:
        """The stages the alert's episode needs, as its ledger knows it."""
        ep = await ledger.episode(alert)
        if alert.status == "resolved":
            self.late.cancel(alert.key)
            await self.fanout.resolve(ep)
            return "resolved"
        if ep.done(RESOLVED):
            if alert.started_at is not None:  # the same episode: a sender's late retry, not a re-fire
                log.info("a firing of %s after its resolution: already resolved, not paged", alert.key)
                return "duplicate"
            await ep.forget()  # no start time to tell episodes apart: it fires again, a new page
        chosen = await ep.page()
        if chosen is not None:  # a sender's repeat or retry: only the sinks that missed the page
            await self.fanout.deliver(ep, chosen)
            return "duplicate"
        if self.ctx.mode == "shadow":
            return await self.shadow(ep, gate, until)
        return await self.choose(ep, await self.decide(alert, gate, until))
