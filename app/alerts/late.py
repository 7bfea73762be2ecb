"""The late path of a fallback page, resumable by any router process: scan the ledger's pending list,
take over what nobody works on, classify it later (waking the decision service, retried with the one
backoff, app/core/backoff.py, under a claim renewed as it goes), and update the page's sinks with the
classification (the same incident: the same `dedup_key`).

Its calls to the ledger run outside any delivery: each under the store's own timeout
(`alerts_ledger_timeout_s`), never a delivery's deadline, and never counted as a delivery's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import replace

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from app.alerts.answers import RouterAnswers
from app.alerts.errors import DeliveryFailed
from app.alerts.ledger import CLASSIFY, RESOLVED, UPDATED, Claim, Episode, Ledger, Pending
from app.alerts.records import Alert
from app.alerts.stages import Classify, Context, Deliver, KeyedLocks, Record
from app.core.backoff import Backoff

log = logging.getLogger("app.alerts")

UPDATE_ATTEMPTS = 5


class LatePath:
    def __init__(
        self,
        ctx: Context,
        ledger: Ledger,
        locks: KeyedLocks,
        classify: Classify,
        record: Record,
        deliver: Deliver,
        *,
        reclassify_for_s: float,
        scan_s: float,
        backoff: Backoff,
    ) -> None:
        self.ctx, self.ledger, self.locks = ctx, ledger, locks
        self.classify, self.record, self.deliver = classify, record, deliver
        self.reclassify_for_s = reclassify_for_s
        self.scan_s = scan_s
        self.backoff = backoff  # between classification attempts, and between an update's
        self.tasks: dict[str, asyncio.Task[None]] = {}  # alert key -> its pending classification
        # Alert key -> when its fallback page went out: the ledger's pending list at the last scan,
        # and the classifications running here (the metrics' view of what still waits).
        self._listed: dict[str, float] = {}
        self._waiting: dict[str, float] = {}
        ctx.metrics.pending.set_function(lambda: len(self._listed | self._waiting))
        ctx.metrics.pending_age.set_function(lambda: _oldest_s((self._listed | self._waiting).values()))
        self._last_scan = -float("inf")
        self._scanning: asyncio.Task[None] | None = None
        self._scanner: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Take over the pending classifications other processes left, now and every `scan_s`."""
        self._scanner = asyncio.create_task(self._scan_forever())

    async def aclose(self) -> None:
        """Stop scanning and classifying; each classification releases its claim as it stops, so
        that the next process takes it over at once."""
        tasks = [t for t in (self._scanner, self._scanning) if t is not None]
        tasks += self.tasks.values()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def scan_soon(self) -> None:
        """A scan in the background, unless one ran within `scan_s` (on each delivery)."""
        if time.monotonic() - self._last_scan >= self.scan_s and (
            self._scanning is None or self._scanning.done()
        ):
            self._last_scan = time.monotonic()
            self._scanning = asyncio.create_task(self.scan())

    async def _scan_forever(self) -> None:
        while True:
            self._last_scan = time.monotonic()
            await self.scan()
            await asyncio.sleep(self.scan_s)

    async def scan(self) -> None:
        """Take over each pending classification nobody is working on."""
        try:
            pending = await self.ledger.pending()
        except Exception:
            log.exception("pending classifications not scanned")
            return
        self._listed = {item.alert.key: item.since for item in pending}
        for item in pending:
            if item.alert.key in self.tasks:
                continue
            try:
                async with self.locks(item.alert.key):
                    await self._take_over(item)
            except Exception:  # one unreadable entry must not stop the others, nor the next scans
                log.exception("the pending classification of %s was not taken over", item.alert.key)

    async def _take_over(self, item: Pending) -> None:
        ep = await self.ledger.episode(item.alert)
        if ep.done(RESOLVED) or ep.done(UPDATED) or await ep.page() is None:
            await self.ledger.drop_pending(item.alert)  # finished, but its listing outlived it
            return
        if await self.resume(ep, item.since):
            self.ctx.metrics.resumed.inc()
            log.info("took over the classification of %s (paged unclassified %.0f s ago)",
                     item.alert.key, time.time() - item.since)  # fmt: skip

    async def pend(self, ep: Episode) -> None:
        """A fallback page just chosen: listed as pending in the ledger (through the delivery's
        calls), so that another process finishes it if this one dies, then classified here."""
        await ep.ledger.add_pending(ep.alert)
        await self.resume(ep, time.time())

    async def resume(self, ep: Episode, since: float) -> bool:
        """Classify the episode's fallback page in the background, under its claim (False: another
        process holds it, or one runs here already)."""
        key = ep.alert.key
        if key in self.tasks:
            return False
        claim = await ep.claim(CLASSIFY)
        if claim is None:
            return False
        later = Episode(self.ledger, ep.alert)  # its own calls from now on, off the delivery's
        self.tasks[key] = asyncio.create_task(self._classify_later(later, since, claim))
        return True

    def cancel(self, key: str) -> None:
        """The alert resolved: its classification is not needed any more."""
        task = self.tasks.pop(key, None)
        if task is not None:
            task.cancel()

    async def _classify_later(self, ep: Episode, since: float, claim: Claim) -> None:
        """Wake the service, classify the alert when it answers, update the fallback deliveries;
        the claim renewed as it goes (given up when another process took it over)."""
        alert = ep.alert
        self._waiting[alert.key] = since
        until = since + self.reclassify_for_s
        delays = self.backoff.delays()
        held: Claim | None = claim
        try:
            while time.time() < until:
                answered = await self.classify.later(alert)
                if answered is not None:
                    await self._update(alert, answered)
                    await self.ledger.drop_pending(alert)
                    return
                await asyncio.sleep(min(next(delays), self.ledger.claim_s / 3))
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
            self.ctx.metrics.unclassified.inc()
            await self.ledger.drop_pending(alert)
        finally:
            self.tasks.pop(alert.key, None)
            self._waiting.pop(alert.key, None)
            self._listed.pop(alert.key, None)
            if held is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await ep.release(held)  # at shutdown too: the next process takes it over at once

    async def _update(self, alert: Alert, answered: RouterAnswers) -> None:
        """The classification onto the fallback page's sinks (the same incident), retried until it
        lands, `UPDATE_ATTEMPTS` times at most."""
        decided = self.ctx.policy.decide(alert, answered)
        self.ctx.metrics.classified.labels(f"late-{decided.action}").inc()

        async def once() -> None:
            policy = self.ctx.policy
            async with self.locks(alert.key):
                ep = await self.ledger.episode(alert)
                if ep.done(RESOLVED):
                    return  # resolved meanwhile: nothing left to update
                first = await ep.page()
                # Still a page on the first page's sinks: an open incident is updated, never withdrawn.
                update = replace(
                    decided,
                    action="page",
                    route=first.route if first is not None else policy.fallback_route,
                    reason=f"classified late: {decided.action}, route {decided.route} ({decided.reason})",
                )
                update, won = await ep.choose(update, UPDATED)
                if won:
                    self.record(update, event="update")
                await self.deliver(ep, update)

        def failed(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            log.warning("update of %s failed (attempt %d): %s", alert.key, state.attempt_number, error)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(UPDATE_ATTEMPTS),
            wait=self.backoff,
            retry=retry_if_exception_type(DeliveryFailed),
            after=failed,
            reraise=True,
        )
        with contextlib.suppress(DeliveryFailed):  # given up: the page stays as it is
            await retrying(once)


def _oldest_s(since: Iterable[float]) -> float:
    """How long the oldest of fallback pages sent at `since` (time.time()) has waited."""
    waiting = list(since)
    return max(0.0, time.time() - min(waiting)) if waiting else 0.0
