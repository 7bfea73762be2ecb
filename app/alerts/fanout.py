"""The fan-out: a page (or a resolution) to each of its sinks at once, each sink at most once per step
of an episode, under the ledger's claims. Per sink: skip what is done, claim, send (the sink's own
retries: app/alerts/sinks/delivery.py), mark; a failed send releases its claim so that the sender's
retry, here or at another instance, sends only what is missing."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from app.alerts.errors import DeliveryFailed
from app.alerts.ledger import CHOSEN, RESOLVED, Claim, Episode, Ledger
from app.alerts.records import Page
from app.alerts.sinks import Sink, SinkError
from app.alerts.stages import Context, Record

log = logging.getLogger("app.alerts")

Send = Callable[[Sink], Awaitable[None]]


class Fanout:
    def __init__(self, ctx: Context, sinks: dict[str, Sink], ledger: Ledger, record: Record) -> None:
        self.ctx, self.sinks, self.record = ctx, sinks, record
        self.ledger = ledger  # off any delivery's deadline: the claims' releases after their facts
        self.claim_wait_s = min(5.0, ledger.claim_s)  # a live claim of another process: wait this long
        self._cleanup: set[asyncio.Task[None]] = set()

    async def deliver(self, ep: Episode, page: Page) -> None:
        """The page to its route's sinks, each at most once per kind of delivery."""
        policy = self.ctx.policy
        step = f"{page.action}.{'classified' if page.classified else 'fallback'}"
        route = page.route if page.route in policy.spec.routes else policy.fallback_route
        if route != page.route:  # decided by another revision's policy
            log.error("route %r of %s is not in this policy: the fallback route", page.route, ep.alert.key)
        names = policy.sinks_of(route, page.action)
        await self._each(ep, step, page.action, names, lambda sink: sink.deliver(page))

    async def resolve(self, ep: Episode) -> None:
        """The resolution to the sinks that got the episode's page, then its record."""
        alert, policy = ep.alert, self.ctx.policy
        # The sinks that got its page (none when it was dropped); for an alert the ledger does not
        # know (a memory ledger restarted since, or it expired), the fallback route's: a resolution
        # nobody needed is harmless, a page left open is not. The listing says which: the page itself
        # need not be read.
        fallback = policy.sinks_of(policy.fallback_route, "page")
        names = sorted(ep.sinks()) if ep.done(CHOSEN) else fallback
        await self._each(ep, "resolve", "resolve", names, lambda sink: sink.resolve(alert))
        if await ep.mark(RESOLVED):  # a repeated resolution is not a new record
            self.record.resolved(alert, names)
        await ep.ledger.drop_pending(alert)

    async def drain(self) -> None:
        """Let the claims' releases land (at shutdown)."""
        await asyncio.gather(*self._cleanup, return_exceptions=True)

    async def _each(self, ep: Episode, step: str, kind: str, names: list[str], send: Send) -> None:
        """`send` to each named sink that has not had this step for this episode, all at once, each
        under its step's claim (another process sending it is waited for, briefly); every sink is
        tried, then DeliveryFailed names those that failed."""
        results = await asyncio.gather(*(self._send(ep, step, kind, name, send) for name in names))
        failures = [failure for failure in results if failure]
        if failures:
            raise DeliveryFailed("; ".join(failures))

    async def _send(self, ep: Episode, step: str, kind: str, name: str, send: Send) -> str | None:
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
        metrics = self.ctx.metrics
        try:
            await send(sink)
        except SinkError as e:
            await ep.release(claim)
            metrics.failed.labels(name).inc()
            # A refusal (a 4xx: the sink's configuration) will not heal by the sender's retry.
            log.log(logging.WARNING if e.retryable else logging.ERROR, "%s (alert %s)", e, ep.alert.key)
            return str(e)
        await ep.mark(fact)
        metrics.delivered.labels(name, kind).inc()
        # The fact is what others read; the claim's removal is cleanup, off the delivery's path.
        self._background(self.ledger.release(claim))
        return None

    async def _claim(self, ep: Episode, fact: str) -> Claim | None:
        """The claim to send `fact`; while another process holds it, wait for its fact (then None,
        with the fact done) or its claim's end, up to `claim_wait_s` (then None)."""
        give_up = time.monotonic() + self.claim_wait_s
        while True:
            claim = await ep.claim(fact)
            if claim is not None:
                await ep.load()  # sent by another process between our listing and the claim?
                if ep.done(fact):
                    await ep.release(claim)
                    return None
                return claim
            if time.monotonic() >= give_up:
                return None
            await asyncio.sleep(0.2)
            await ep.load()
            if ep.done(fact):
                return None

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._cleanup.add(task)
        task.add_done_callback(self._cleaned)

    def _cleaned(self, task: asyncio.Task[None]) -> None:
        self._cleanup.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("ledger cleanup failed: %s", task.exception())
