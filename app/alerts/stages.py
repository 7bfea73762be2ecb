"""The router's stages, each a small object over one explicit `Context` (app/alerts/triage.py composes
them): classify (the answers within the budget, or the fallback page), decide (the policy's page),
choose (the episode's decision: the first process's wins; recorded, then delivered), and shadow
mode's variant of choose. The fan-out to the sinks is app/alerts/fanout.py; the late path of a
fallback page app/alerts/late.py. A stage reaches the fan-out and the late path through the callables
it is given, never their modules."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from app.alerts.answers import RouterAnswers
from app.alerts.audit import AuditLog, AuditRecord, Event, Mode
from app.alerts.ledger import Episode
from app.alerts.metrics import RouterMetrics
from app.alerts.policy import Policy
from app.alerts.records import Alert, Page
from app.core.errors import EngineUnavailable, ServiceError
from app.jev.client import JevClient

log = logging.getLogger("app.alerts")

Deliver = Callable[[Episode, Page], Awaitable[None]]  # the page to its route's sinks (Fanout.deliver)
Pend = Callable[[Episode], Awaitable[None]]  # listed as pending, classified later (LatePath.pend)


@dataclass
class Context:
    """What every stage reads: one object, so that a policy swapped at run time reaches them all."""

    policy: Policy
    metrics: RouterMetrics
    audit: AuditLog
    mode: Mode


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


class Record:
    """Audit and metrics: never decide without a record (app/alerts/audit.py)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def __call__(self, page: Page, *, event: Event = "decision", would: Page | None = None) -> None:
        """The decision's audit record, and its count by action and route."""
        ctx = self.ctx
        label = ctx.policy.spec.floor.label
        ctx.audit.write(AuditRecord.of(page, event=event, mode=ctx.mode, would=would, source_label=label))
        if event == "decision":  # a late update is counted by `classified` (late-*), not twice here
            counted = would or page
            ctx.metrics.decisions.labels(ctx.mode, counted.action, counted.route).inc()

    def resolved(self, alert: Alert, sinks: list[str]) -> None:
        ctx = self.ctx
        label = ctx.policy.spec.floor.label
        ctx.audit.write(AuditRecord.resolved(alert, mode=ctx.mode, source_label=label, sinks=sinks))


class Classify:
    """The model's answers about an alert, from the decision service."""

    def __init__(self, ctx: Context, gateway: JevClient, budget_s: float) -> None:
        self.ctx, self.gateway, self.budget_s = ctx, gateway, budget_s

    async def __call__(
        self, alert: Alert, gate: asyncio.Semaphore, until: float
    ) -> RouterAnswers | Unclassified:
        """The answers by `until` (the delivery's arrival plus the budget: the wait for a free slot
        and the ledger's calls before it count), or the fallback page saying why there are none."""
        policy = self.ctx.policy

        async def gated() -> RouterAnswers:
            async with gate:
                return RouterAnswers.of(await self.gateway.response(policy.request(alert)))

        started = time.perf_counter()
        try:
            answered = await asyncio.wait_for(gated(), max(0.0, until - time.monotonic()))
        except (TimeoutError, EngineUnavailable) as e:
            why = (
                f"the decision service did not answer within {self.budget_s:g} s"
                if isinstance(e, TimeoutError)
                else str(e)
            )
            return Unclassified(policy.fallback(alert, why), retry=True)
        except ServiceError as e:  # the router's own configuration: page anyway, and say so loudly
            log.error("classification refused for %s: %s", alert.key, e)
            return Unclassified(policy.fallback(alert, f"classification refused: {e}"), retry=False)
        self.ctx.metrics.decision_seconds.observe(time.perf_counter() - started)
        return answered

    async def later(self, alert: Alert) -> RouterAnswers | None:
        """One late attempt, with no budget: the answers, or None (not ready, or refused for now)."""
        if not await self.gateway.ready(timeout_s=30.0):  # also what starts a scaled-to-zero instance
            return None
        try:
            return RouterAnswers.of(await self.gateway.response(self.ctx.policy.request(alert)))
        except ServiceError as e:
            log.info("classification of %s not yet: %s", alert.key, e)
            return None


class Decide:
    """The policy's page for an alert: a rule that never classifies decides without the model;
    otherwise the model's answers decide, or, without them in time, the fallback page."""

    def __init__(self, ctx: Context, classify: Classify) -> None:
        self.ctx, self.classify = ctx, classify

    async def __call__(
        self, alert: Alert, gate: asyncio.Semaphore, until: float, *, count: bool = True
    ) -> Page | Unclassified:
        """`count`: a classified decision counts in `classified` (not what shadow mode would do)."""
        policy = self.ctx.policy
        rule = policy.rule_for(alert)
        if rule is not None and not rule.classify:  # the model is never asked
            return policy.decide(alert, None)
        answered = await self.classify(alert, gate, until)
        if isinstance(answered, Unclassified):
            return answered
        page = policy.decide(alert, answered)
        if count:
            self.ctx.metrics.classified.labels(page.action).inc()
        return page


class Choose:
    """Make the decision the episode's, record it, deliver it; when another process decided first,
    deliver that one instead. A fallback page to classify later is listed as pending before it is
    sent (`pend`), so that another process finishes it if this one dies."""

    def __init__(self, ctx: Context, record: Record, deliver: Deliver, pend: Pend) -> None:
        self.ctx, self.record, self.deliver, self.pend = ctx, record, deliver, pend

    async def __call__(self, ep: Episode, decided: Page | Unclassified) -> str:
        fallback = isinstance(decided, Unclassified)
        page = decided.page if isinstance(decided, Unclassified) else decided
        chosen, won = await ep.choose(page)
        if not won:
            await self.deliver(ep, chosen)
            return "duplicate"
        if fallback:
            self.ctx.metrics.fallback.inc()
        self.record(chosen)
        if isinstance(decided, Unclassified) and decided.retry:
            await self.pend(ep)
        await self.deliver(ep, chosen)
        return "fallback" if fallback else chosen.action


class Shadow:
    """Shadow mode: page as sent, then record what the policy would have done (also when the page
    failed: the sender's retry only completes the page). Nothing is classified later: nothing sent
    depends on it."""

    def __init__(self, ctx: Context, decide: Decide, record: Record, deliver: Deliver) -> None:
        self.ctx, self.decide, self.record, self.deliver = ctx, decide, record, deliver

    async def __call__(self, ep: Episode, gate: asyncio.Semaphore, until: float) -> str:
        sent, won = await ep.choose(self.ctx.policy.as_sent(ep.alert))
        try:
            await self.deliver(ep, sent)
        finally:
            if won:
                decided = await self.decide(ep.alert, gate, until, count=False)
                would = decided.page if isinstance(decided, Unclassified) else decided
                self.record(sent, would=would)
        return "shadow" if won else "duplicate"
