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
budget, plus `ledger_timeout_s`), the classification by the budget: when the store does not answer
in time, the alert is routed from this process's memory (app/alerts/store.py `FailoverStore`), and
what it decided reaches the store once it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from app.alerts.answers import RouterAnswers
from app.alerts.audit import AuditLog, AuditRecord, Event, Mode
from app.alerts.errors import DeliveryFailed
from app.alerts.ledger import CHOSEN, CLASSIFY, RESOLVED, UPDATED, Claim, Episode, Ledger, Pending
from app.alerts.metrics import RouterMetrics
from app.alerts.policy import Policy
from app.alerts.records import Alert, Page
from app.alerts.sinks import Sink, SinkError
from app.alerts.store import FailoverStore, ObjectStore, Served, deadline, served
from app.core.errors import EngineUnavailable, ServiceError
from app.jev.client import JevClient

log = logging.getLogger("app.alerts")


@dataclass(frozen=True)
class Unclassified:
    """No answers within the budget: the fallback page, and whether to classify it later (not
    when the gateway refused the router's own request: that will not heal by itself)."""

    page: Page
    retry: bool


class KeyedLocks:
    """One lock per alert key, dropped when nobody holds or awaits it: two deliveries about the
    same alert (a retry racing the original) are routed one after the other."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def __call__(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


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
        self.policy = policy
        self.audit = audit or AuditLog()
        self.mode: Mode = mode
        self.gateway = gateway
        self.sinks = sinks
        self.metrics = metrics
        self.budget_s = budget_s
        self.reclassify_for_s = reclassify_for_s
        self.max_concurrency = max_concurrency
        # The shared store (None: this process's memory alone) with memory behind it: when the store
        # does not answer, alerts are paged from memory (perhaps once more by another instance)
        # rather than held back.
        self.store = FailoverStore(store, metrics, timeout_s=ledger_timeout_s)
        self.ledger = Ledger(self.store, claim_s=claim_s)
        self.ledger_timeout_s = ledger_timeout_s
        self.scan_s = scan_s
        self.claim_wait_s = min(5.0, self.ledger.claim_s)  # a live claim of another process: wait this long
        self.retry_base_s, self.retry_cap_s = 2.0, 60.0  # between classification attempts
        self._locks = KeyedLocks()
        self.heartbeats = heartbeats
        self._later: dict[str, asyncio.Task[None]] = {}  # alert key -> its pending classification
        # Alert key -> when its fallback page went out: the ledger's pending list at the last scan,
        # and the classifications running here (the metrics' view of what still waits).
        self._listed: dict[str, float] = {}
        self._waiting: dict[str, float] = {}
        metrics.pending.set_function(lambda: len(self._listed | self._waiting))
        metrics.pending_age.set_function(self._oldest_pending_s)
        self._last_scan = -float("inf")
        self._scanning: asyncio.Task[None] | None = None
        self._scanner: asyncio.Task[None] | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._cleanup: set[asyncio.Task[None]] = set()  # claims released after their fact

    async def start(self) -> None:
        """Take over the pending classifications other processes left, now and every `scan_s`;
        while the ledger's store is away, try it again every `store.retry_s`."""
        self._scanner = asyncio.create_task(self._scan_forever())
        if self.store.shared is not None:
            self._recovery = asyncio.create_task(self.store.recover_forever())

    async def aclose(self) -> None:
        tasks = [t for t in (self._scanner, self._scanning, self._recovery) if t is not None]
        tasks += self._later.values()
        await asyncio.gather(*self._cleanup, return_exceptions=True)  # let releases land
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
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
        self._scan_soon()
        gate = asyncio.Semaphore(self.max_concurrency)
        arrived = time.monotonic()
        # The store's calls for this delivery answer by its deadline (each alert's task inherits it).
        token = deadline.set(arrived + self.budget_s + self.ledger_timeout_s)
        try:
            results = await asyncio.gather(
                *(self._one(a, gate, arrived + self.budget_s) for a in alerts), return_exceptions=True
            )
        finally:
            deadline.reset(token)
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

    def _oldest_pending_s(self) -> float:
        waiting = (self._listed | self._waiting).values()
        return max(0.0, time.time() - min(waiting)) if waiting else 0.0

    async def _one(self, alert: Alert, gate: asyncio.Semaphore, until: float) -> str:
        """Route one alert (its own task: `served` is its own), classified by `until`."""
        self.metrics.received.labels(alert.source, alert.status).inc()
        if alert.title in self.heartbeats:  # the dead-man's switch's signal, not an incident
            self.metrics.heartbeats.labels(alert.source).inc()
            self.metrics.heartbeat_at.labels(alert.source).set_to_current_time()
            return "heartbeat"
        mark = Served()
        served.set(mark)
        async with self._locks(alert.key):
            outcome = await self._route(alert, gate, until)
        if mark.from_memory:
            self.metrics.from_memory.labels(outcome).inc()
            log.warning("%s routed from this process's memory (the ledger's store is away): %s",
                        alert.key, outcome)  # fmt: skip
        return outcome

    async def _route(self, alert: Alert, gate: asyncio.Semaphore, until: float) -> str:
        ep = await self.ledger.episode(alert)
        if alert.status == "resolved":
            await self._resolve(ep)
            return "resolved"
        if ep.done(RESOLVED):
            if alert.started_at is not None:  # the same episode: a sender's late retry, not a re-fire
                log.info("a firing of %s after its resolution: already resolved, not paged", alert.key)
                return "duplicate"
            await ep.forget()  # no start time to tell episodes apart: it fires again, a new page
        chosen = await ep.page()
        if chosen is not None:  # a sender's repeat or retry: only the sinks that missed the page
            await self._deliver(ep, chosen)
            return "duplicate"
        if self.mode == "shadow":
            return await self._shadow(ep, gate, until)
        rule = self.policy.rule_for(alert)
        if rule is not None and not rule.classify:  # the model is never asked
            return await self._decided(ep, self.policy.decide(alert, None))
        answered = await self._classify(alert, gate, until)
        if isinstance(answered, Unclassified):
            return await self._fallback(ep, answered.page, retry=answered.retry)
        page = self.policy.decide(alert, answered)
        self.metrics.classified.labels(page.action).inc()
        return await self._decided(ep, page)

    async def _decided(self, ep: Episode, page: Page) -> str:
        """Make `page` the episode's decision, record it, deliver it; when another process decided
        first, deliver that one instead."""
        chosen, won = await ep.choose(page)
        if won:
            self._record(chosen)
        await self._deliver(ep, chosen)
        return chosen.action if won else "duplicate"

    async def _classify(
        self, alert: Alert, gate: asyncio.Semaphore, until: float
    ) -> RouterAnswers | Unclassified:
        """The answers by `until` (the delivery's arrival plus the budget: the wait for a free slot
        and the ledger's calls before it count), or the fallback page saying why there are none."""

        async def gated() -> RouterAnswers:
            async with gate:
                return RouterAnswers.of(await self.gateway.response(self.policy.request(alert)))

        started = time.perf_counter()
        try:
            answered = await asyncio.wait_for(gated(), max(0.0, until - time.monotonic()))
        except (TimeoutError, EngineUnavailable) as e:
            why = (
                f"the decision service did not answer within {self.budget_s:g} s"
                if isinstance(e, TimeoutError)
                else str(e)
            )
            return Unclassified(self.policy.fallback(alert, why), retry=True)
        except ServiceError as e:  # the router's own configuration: page anyway, and say so loudly
            log.error("classification refused for %s: %s", alert.key, e)
            return Unclassified(self.policy.fallback(alert, f"classification refused: {e}"), retry=False)
        self.metrics.decision_seconds.observe(time.perf_counter() - started)
        return answered

    async def _shadow(self, ep: Episode, gate: asyncio.Semaphore, until: float) -> str:
        """Page as sent, then record what the policy would have done (also when the page failed:
        the sender's retry only completes the page)."""
        alert = ep.alert
        sent, won = await ep.choose(self.policy.as_sent(alert))
        try:
            await self._deliver(ep, sent)
        finally:
            if won:
                rule = self.policy.rule_for(alert)
                would: Page
                if rule is not None and not rule.classify:
                    would = self.policy.decide(alert, None)
                else:
                    answered = await self._classify(alert, gate, until)
                    would = (
                        answered.page
                        if isinstance(answered, Unclassified)
                        else self.policy.decide(alert, answered)
                    )
                self._record(sent, would=would)
        return "shadow" if won else "duplicate"

    def _record(self, page: Page, *, event: Event = "decision", would: Page | None = None) -> None:
        """The decision's audit record, and its count by action and route."""
        label = self.policy.spec.floor.label
        self.audit.write(AuditRecord.of(page, event=event, mode=self.mode, would=would, source_label=label))
        if event == "decision":  # a late update is counted by `classified` (late-*), not twice here
            counted = would or page
            self.metrics.decisions.labels(self.mode, counted.action, counted.route).inc()

    async def _fallback(self, ep: Episode, page: Page, *, retry: bool) -> str:
        """Page now, unclassified (the fallback route, or its rule's team), and classify later when
        `retry`: listed as pending in the ledger first, so that another process finishes it if
        this one dies."""
        chosen, won = await ep.choose(page)
        if not won:
            await self._deliver(ep, chosen)
            return "duplicate"
        self.metrics.fallback.inc()
        self._record(chosen)
        if retry:
            await ep.ledger.add_pending(ep.alert)
            await self._resume(ep, time.time())
        await self._deliver(ep, chosen)
        return "fallback"

    async def _deliver(self, ep: Episode, page: Page) -> None:
        """The page to its route's sinks, each at most once per kind of delivery."""
        step = f"{page.action}.{'classified' if page.classified else 'fallback'}"
        route = page.route if page.route in self.policy.spec.routes else self.policy.fallback_route
        if route != page.route:  # decided by another revision's policy
            log.error("route %r of %s is not in this policy: the fallback route", page.route, ep.alert.key)
        names = self.policy.sinks_of(route, page.action)
        await self._each(ep, step, page.action, names, lambda sink: sink.deliver(page))

    async def _resolve(self, ep: Episode) -> None:
        alert = ep.alert
        pending = self._later.pop(alert.key, None)
        if pending is not None:
            pending.cancel()
        # The sinks that got its page (none when it was dropped); for an alert the ledger does not
        # know (a memory ledger restarted since, or it expired), the fallback route's: a resolution
        # nobody needed is harmless, a page left open is not.
        if ep.done(CHOSEN):  # the listing says so: the page itself need not be read
            names = sorted(ep.sinks())
        else:
            names = self.policy.sinks_of(self.policy.fallback_route, "page")
        await self._each(ep, "resolve", "resolve", names, lambda sink: sink.resolve(alert))
        if await ep.mark(RESOLVED):  # a repeated resolution is not a new record
            self.audit.write(
                AuditRecord.resolved(
                    alert, mode=self.mode, source_label=self.policy.spec.floor.label, sinks=names
                )
            )
        await ep.ledger.drop_pending(alert)

    async def _each(
        self, ep: Episode, step: str, kind: str, names: list[str], send: Callable[[Sink], Awaitable[None]]
    ) -> None:
        """`send` to each named sink that has not had this step for this episode, all at once, each
        under its step's claim (another process sending it is waited for, briefly); every sink is
        tried, then DeliveryFailed names those that failed."""
        results = await asyncio.gather(*(self._send(ep, step, kind, name, send) for name in names))
        failures = [failure for failure in results if failure]
        if failures:
            raise DeliveryFailed("; ".join(failures))

    async def _send(
        self, ep: Episode, step: str, kind: str, name: str, send: Callable[[Sink], Awaitable[None]]
    ) -> str | None:
        """One sink's step: None when it is done (now or before), else why not."""
        fact = f"{step}:{name}"
        if ep.done(fact):
            return None
        sink = self.sinks.get(name)
        if sink is None:  # named by another revision's policy
            log.error("sink %r (alert %s) is not in this policy: %s not sent", name, ep.alert.key, step)
            return None
        claim = await self._claim(ep, fact)
        if claim is None:
            return None if ep.done(fact) else f"{name}: being sent by another router process"
        try:
            await send(sink)
        except SinkError as e:
            await ep.release(claim)
            self.metrics.failed.labels(name).inc()
            # A refusal (a 4xx: the sink's configuration) will not heal by the sender's retry.
            log.log(logging.WARNING if e.retryable else logging.ERROR, "%s (alert %s)", e, ep.alert.key)
            return str(e)
        await ep.mark(fact)
        self.metrics.delivered.labels(name, kind).inc()
        # The fact is what others read; the claim's removal is cleanup, off the delivery's path.
        self._background(ep.release(claim))
        return None

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(_detached(work))
        self._cleanup.add(task)
        task.add_done_callback(self._cleanup_done)

    def _cleanup_done(self, task: asyncio.Task[None]) -> None:
        self._cleanup.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("ledger cleanup failed: %s", task.exception())

    async def _claim(self, ep: Episode, fact: str) -> Claim | None:
        """The claim to send `fact`; while another process holds it, wait for its fact (then None,
        with the fact done) or its claim's end, up to `claim_wait_s` (then None)."""
        deadline = time.monotonic() + self.claim_wait_s
        while True:
            claim = await ep.claim(fact)
            if claim is not None:
                await ep.load()  # sent by another process between our listing and the claim?
                if ep.done(fact):
                    await ep.release(claim)
                    return None
                return claim
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.2)
            await ep.load()
            if ep.done(fact):
                return None

    # -- late classification of fallback pages, resumable by any process ---------------------------

    def _scan_soon(self) -> None:
        if time.monotonic() - self._last_scan >= self.scan_s and (
            self._scanning is None or self._scanning.done()
        ):
            self._last_scan = time.monotonic()
            self._scanning = asyncio.create_task(self._scan())

    async def _scan_forever(self) -> None:
        while True:
            self._last_scan = time.monotonic()
            await self._scan()
            await asyncio.sleep(self.scan_s)

    async def _scan(self) -> None:
        """Take over each pending classification nobody is working on."""
        try:
            pending = await self.ledger.pending()
        except Exception:
            log.exception("pending classifications not scanned")
            return
        self._listed = {item.alert.key: item.since for item in pending}
        for item in pending:
            if item.alert.key in self._later:
                continue
            try:
                async with self._locks(item.alert.key):
                    await self._take_over(item)
            except Exception:  # one unreadable entry must not stop the others, nor the next scans
                log.exception("the pending classification of %s was not taken over", item.alert.key)

    async def _take_over(self, item: Pending) -> None:
        ep = await self.ledger.episode(item.alert)
        if ep.done(RESOLVED) or ep.done(UPDATED) or await ep.page() is None:
            await self.ledger.drop_pending(item.alert)  # finished, but its listing outlived it
            return
        if await self._resume(ep, item.since):
            self.metrics.resumed.inc()
            log.info("took over the classification of %s (paged unclassified %.0f s ago)",
                     item.alert.key, time.time() - item.since)  # fmt: skip

    async def _resume(self, ep: Episode, since: float) -> bool:
        """Classify the episode's fallback page in the background, under its claim (False: another
        process holds it, or one runs here already)."""
        key = ep.alert.key
        if key in self._later:
            return False
        claim = await ep.claim(CLASSIFY)
        if claim is None:
            return False
        self._later[key] = asyncio.create_task(_detached(self._classify_later(ep, since, claim)))
        return True

    async def _classify_later(self, ep: Episode, since: float, claim: Claim) -> None:
        """Wake the service, classify the alert when it answers, update the fallback deliveries;
        the claim renewed as it goes (given up when another process took it over)."""
        alert = ep.alert
        self._waiting[alert.key] = since
        deadline = since + self.reclassify_for_s
        delay = self.retry_base_s
        held: Claim | None = claim
        try:
            while time.time() < deadline:
                answered = await self._try_classify(alert)
                if answered is not None:
                    await self._update(alert, answered)
                    await self.ledger.drop_pending(alert)
                    return
                await asyncio.sleep(min(delay, self.ledger.claim_s / 3))
                delay = min(delay * 2, self.retry_cap_s)
                held = await ep.renew(claim)
                if held is None:
                    log.warning("the classification of %s was taken over by another process", alert.key)
                    return
                claim = held
            log.warning(
                "gave up classifying %s after %.0f s; its page stays unclassified",
                alert.key,
                self.reclassify_for_s,
            )
            self.metrics.unclassified.inc()
            await self.ledger.drop_pending(alert)
        finally:
            self._later.pop(alert.key, None)
            self._waiting.pop(alert.key, None)
            self._listed.pop(alert.key, None)
            if held is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await ep.release(held)  # at shutdown too: the next process takes it over at once

    async def _try_classify(self, alert: Alert) -> RouterAnswers | None:
        if not await self.gateway.ready(timeout_s=30.0):  # also what starts a scaled-to-zero instance
            return None
        try:
            return RouterAnswers.of(await self.gateway.response(self.policy.request(alert)))
        except ServiceError as e:
            log.info("classification of %s not yet: %s", alert.key, e)
            return None

    async def _update(self, alert: Alert, answered: RouterAnswers) -> None:
        """The classification onto the fallback page's sinks (the same incident), retried until it lands."""
        decided = self.policy.decide(alert, answered)
        self.metrics.classified.labels(f"late-{decided.action}").inc()
        for attempt in range(5):
            try:
                async with self._locks(alert.key):
                    ep = await self.ledger.episode(alert)
                    if ep.done(RESOLVED):
                        return  # resolved meanwhile: nothing left to update
                    first = await ep.page()
                    # Still a page on the first page's sinks: an open incident is updated, never withdrawn.
                    update = replace(
                        decided,
                        action="page",
                        route=first.route if first is not None else self.policy.fallback_route,
                        reason=f"classified late: {decided.action}, route {decided.route} ({decided.reason})",
                    )
                    update, won = await ep.choose(update, UPDATED)
                    if won:
                        self._record(update, event="update")
                    await self._deliver(ep, update)
                return
            except DeliveryFailed as e:
                log.warning("update of %s failed (attempt %d): %s", alert.key, attempt + 1, e)
                await asyncio.sleep(min(self.retry_base_s * 2**attempt, self.retry_cap_s))


async def _detached(work: Coroutine[Any, Any, None]) -> None:
    """`work` off any delivery's path: the store's calls under their own timeout, not the delivery's
    deadline, and not counted as the delivery's."""
    deadline.set(None)
    served.set(None)
    await work
