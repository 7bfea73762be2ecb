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

The ledger remembers, per alert, what each sink already got; a sink that fails makes the whole
delivery answer 502 so the sender retries, and the retry delivers only what is missing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from app.alerts.audit import AuditLog, AuditRecord, Event, Mode
from app.alerts.errors import DeliveryFailed
from app.alerts.metrics import RouterMetrics
from app.alerts.policy import Policy
from app.alerts.records import Alert, Page
from app.alerts.sinks import Sink, SinkError
from app.core.errors import EngineUnavailable, ServiceError
from app.jev.client import JevClient

log = logging.getLogger("app.alerts")


class Ledger:
    """Per alert, the page chosen for it and what each sink already got (bounded: the oldest alerts
    are forgotten first). The page is remembered before it is delivered, so a sender's retry
    completes the same page on the sinks that missed it instead of asking the model again."""

    def __init__(self, size: int = 100_000) -> None:
        self._size = size
        self._done: OrderedDict[str, set[str]] = OrderedDict()
        self._pages: dict[str, Page] = {}

    def done(self, key: str, step: str) -> bool:
        return step in self._done.get(key, set())

    def mark(self, key: str, step: str) -> None:
        self._done.setdefault(key, set()).add(step)
        self._done.move_to_end(key)
        while len(self._done) > self._size:
            old, _ = self._done.popitem(last=False)
            self._pages.pop(old, None)

    def page(self, key: str) -> Page | None:
        return self._pages.get(key)

    def remember(self, page: Page) -> None:
        self._pages[page.alert.key] = page
        self.mark(page.alert.key, "chosen")

    def forget(self, key: str) -> None:
        """A new episode of the alert (it fires again after it was resolved)."""
        self._done.pop(key, None)
        self._pages.pop(key, None)

    def sinks(self, key: str) -> set[str]:
        """The sinks that got a page or ticket for the alert."""
        return {
            step.rsplit(":", 1)[1]
            for step in self._done.get(key, set())
            if step.startswith(("page", "ticket"))
        }


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
        self.ledger = Ledger()
        self.retry_base_s, self.retry_cap_s = 2.0, 60.0  # between classification attempts
        self._locks = KeyedLocks()
        self._later: dict[str, asyncio.Task[None]] = {}  # alert key -> its pending classification

    async def aclose(self) -> None:
        for task in self._later.values():
            task.cancel()
        await asyncio.gather(*self._later.values(), return_exceptions=True)

    async def handle(self, alerts: list[Alert]) -> dict[str, int]:
        """Route one delivery's alerts; the outcome counts. Raises DeliveryFailed (502) when a sink
        failed, after trying every alert, so the sender retries the delivery."""
        gate = asyncio.Semaphore(self.max_concurrency)
        results = await asyncio.gather(*(self._one(a, gate) for a in alerts), return_exceptions=True)
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

    async def _one(self, alert: Alert, gate: asyncio.Semaphore) -> str:
        self.metrics.received.labels(alert.source, alert.status).inc()
        async with self._locks(alert.key):
            return await self._route(alert, gate)

    async def _route(self, alert: Alert, gate: asyncio.Semaphore) -> str:
        if alert.status == "resolved":
            await self._resolve(alert)
            return "resolved"
        if self.ledger.done(alert.key, "resolved"):
            self.ledger.forget(alert.key)  # it fires again: a new page
        chosen = self.ledger.page(alert.key)
        if chosen is not None:  # a sender's repeat or retry: only the sinks that missed the page
            await self._deliver(chosen)
            return "duplicate"
        if self.mode == "shadow":
            return await self._shadow(alert, gate)
        rule = self.policy.rule_for(alert)
        if rule is not None and not rule.classify:  # the model is never asked
            page = self.policy.decide(alert, None)
            self._record(page)
            self.ledger.remember(page)
            await self._deliver(page)
            return page.action
        answered = await self._classify(alert, gate)
        if isinstance(answered, Unclassified):
            return await self._fallback(answered.page, retry=answered.retry)
        page = self.policy.decide(alert, answered[0], calibrated=answered[1])
        self.metrics.classified.labels(page.action).inc()
        self._record(page)
        self.ledger.remember(page)
        await self._deliver(page)
        return page.action

    async def _classify(
        self, alert: Alert, gate: asyncio.Semaphore
    ) -> tuple[dict[str, Any], frozenset[str]] | Unclassified:
        """The answers within the budget, or the fallback page saying why there are none."""
        async with gate:
            started = time.perf_counter()
            try:
                answered = await asyncio.wait_for(
                    self.gateway.answers(self.policy.request(alert)), self.budget_s
                )
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

    async def _shadow(self, alert: Alert, gate: asyncio.Semaphore) -> str:
        """Page as sent, then record what the policy would have done (also when the page failed:
        the sender's retry only completes the page)."""
        sent = self.policy.as_sent(alert)
        self.ledger.remember(sent)
        try:
            await self._deliver(sent)
        finally:
            rule = self.policy.rule_for(alert)
            would: Page
            if rule is not None and not rule.classify:
                would = self.policy.decide(alert, None)
            else:
                answered = await self._classify(alert, gate)
                would = (
                    answered.page
                    if isinstance(answered, Unclassified)
                    else self.policy.decide(alert, answered[0], calibrated=answered[1])
                )
            self._record(sent, would=would)
        return "shadow"

    def _record(self, page: Page, *, event: Event = "decision", would: Page | None = None) -> None:
        """The decision's audit record, and its count by action and route."""
        label = self.policy.spec.floor.label
        self.audit.write(AuditRecord.of(page, event=event, mode=self.mode, would=would, source_label=label))
        if event == "decision":  # a late update is counted by `classified` (late-*), not twice here
            counted = would or page
            self.metrics.decisions.labels(self.mode, counted.action, counted.route).inc()

    async def _fallback(self, page: Page, *, retry: bool) -> str:
        """Page now, unclassified (the fallback route, or its rule's team), and classify later when
        `retry`."""
        self.metrics.fallback.inc()
        self._record(page)
        self.ledger.remember(page)
        key = page.alert.key
        if retry and key not in self._later:
            self._later[key] = asyncio.create_task(self._classify_later(page.alert))
        await self._deliver(page)
        return "fallback"

    async def _deliver(self, page: Page) -> None:
        """The page to its route's sinks, each at most once per kind of delivery."""
        step = f"{page.action}.{'classified' if page.classified else 'fallback'}"
        names = self.policy.sinks_of(page.route, page.action)
        await self._each(page.alert.key, step, page.action, names, lambda sink: sink.deliver(page))

    async def _resolve(self, alert: Alert) -> None:
        pending = self._later.pop(alert.key, None)
        if pending is not None:
            pending.cancel()
        # The sinks that got its page (none when it was dropped); for an alert this process has not
        # seen (it restarted since), the fallback route's: a resolution nobody needed is harmless, a
        # page left open is not.
        if self.ledger.page(alert.key) is not None:
            names = sorted(self.ledger.sinks(alert.key))
        else:
            names = self.policy.sinks_of(self.policy.fallback_route, "page")
        await self._each(alert.key, "resolve", "resolve", names, lambda sink: sink.resolve(alert))
        if not self.ledger.done(alert.key, "resolved"):  # a repeated resolution is not a new record
            self.audit.write(
                AuditRecord.resolved(
                    alert, mode=self.mode, source_label=self.policy.spec.floor.label, sinks=names
                )
            )
        self.ledger.mark(alert.key, "resolved")

    async def _each(
        self, key: str, step: str, kind: str, names: list[str], send: Callable[[Sink], Awaitable[None]]
    ) -> None:
        """`send` to each named sink that has not had this step for this alert; every sink is tried,
        then DeliveryFailed names those that failed."""
        failures = []
        for name in names:
            if self.ledger.done(key, f"{step}:{name}"):
                continue
            try:
                await send(self.sinks[name])
            except SinkError as e:
                self.metrics.failed.labels(name).inc()
                # A refusal (a 4xx: the sink's configuration) will not heal by the sender's retry.
                log.log(logging.WARNING if e.retryable else logging.ERROR, "%s (alert %s)", e, key)
                failures.append(str(e))
                continue
            self.ledger.mark(key, f"{step}:{name}")
            self.metrics.delivered.labels(name, kind).inc()
        if failures:
            raise DeliveryFailed("; ".join(failures))

    async def _classify_later(self, alert: Alert) -> None:
        """Wake the service, classify the alert when it answers, update the fallback deliveries."""
        deadline = time.monotonic() + self.reclassify_for_s
        delay = self.retry_base_s
        try:
            while time.monotonic() < deadline:
                answered = await self._try_classify(alert)
                if answered is not None:
                    await self._update(alert, answered)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_cap_s)
            log.warning(
                "gave up classifying %s after %.0f s; its page stays unclassified",
                alert.key,
                self.reclassify_for_s,
            )
            self.metrics.unclassified.inc()
        finally:
            self._later.pop(alert.key, None)

    async def _try_classify(self, alert: Alert) -> tuple[dict[str, Any], frozenset[str]] | None:
        if not await self.gateway.ready(timeout_s=30.0):  # also what starts a scaled-to-zero instance
            return None
        try:
            return await self.gateway.answers(self.policy.request(alert))
        except ServiceError as e:
            log.info("classification of %s not yet: %s", alert.key, e)
            return None

    async def _update(self, alert: Alert, answered: tuple[dict[str, Any], frozenset[str]]) -> None:
        """The classification onto the fallback page's sinks (the same incident), retried until it lands."""
        decided = self.policy.decide(alert, answered[0], calibrated=answered[1])
        first = self.ledger.page(alert.key)
        # Still a page on the first page's sinks: an open incident is updated, never withdrawn.
        update = replace(
            decided,
            action="page",
            route=first.route if first is not None else self.policy.fallback_route,
            reason=f"classified late: {decided.action}, route {decided.route} ({decided.reason})",
        )
        self.metrics.classified.labels(f"late-{decided.action}").inc()
        for attempt in range(5):
            try:
                async with self._locks(alert.key):
                    if self.ledger.done(alert.key, "resolved"):
                        return  # resolved meanwhile: nothing left to update
                    if not self.ledger.done(alert.key, "updated"):
                        self._record(update, event="update")
                        self.ledger.mark(alert.key, "updated")
                    self.ledger.remember(update)
                    await self._deliver(update)
                return
            except DeliveryFailed as e:
                log.warning("update of %s failed (attempt %d): %s", alert.key, attempt + 1, e)
                await asyncio.sleep(min(self.retry_base_s * 2**attempt, self.retry_cap_s))
