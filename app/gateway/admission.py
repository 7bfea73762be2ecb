"""Admission: a FIFO of decisions weighted by the engine reads they plan; 429 beyond the queue, and
for a decision whose deadline would pass before it could be read."""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.core.errors import DeadlinePassed, Draining, Saturated
from app.gateway.metrics import Metrics

_TOO_LATE = (
    "The gateway is saturated: no slot would come in time to answer before the decision's deadline; "
    "retry after the indicated delay."
)


class Admission:
    """`capacity` units read at once, `queued` decisions wait, first come first served, each for
    at most `max_wait_s`, and never past the point where its deadline leaves less time than recent
    decisions held a slot (then 429: a decision granted later would be answered after its client
    has stopped waiting, and would take the engine from those behind it).

    A decision weighs one unit per started `reads_per_unit` planned reads (at most the whole
    capacity), so one request planning thousands of reads cannot hold the engine while it counts as
    one decision. The queue is strict FIFO: a heavy decision at its head is not starved by light ones.
    """

    def __init__(
        self,
        capacity: int,
        queued: int,
        reads_per_unit: int,
        retry_after_s: int,
        metrics: Metrics,
        max_wait_s: float | None = None,
        recent: int = 16,
    ) -> None:
        self.capacity = capacity
        self._free = capacity
        self._max_waiting = queued
        self._reads_per_unit = reads_per_unit
        # Each waiter's units, the future that grants them, and its deadline.
        self._waiters: deque[tuple[int, asyncio.Future[None], float | None]] = deque()
        self._retry_after = retry_after_s
        self._metrics = metrics
        self._max_wait_s = max_wait_s
        self._held_s: deque[float] = deque(maxlen=recent)  # the last decisions' time in a slot
        self.draining = False

    def drain(self) -> None:
        """Take no new decision (503), and turn away those waiting in line; those holding a slot
        finish. Called once the service is told to stop."""
        self.draining = True
        while self._waiters:
            _, granted, _ = self._waiters.popleft()
            if not granted.done():
                granted.set_exception(self._draining())

    @property
    def idle(self) -> bool:
        """No decision holds a slot or waits for one."""
        return self._free == self.capacity and not self._waiters

    def _draining(self) -> Draining:
        return Draining(
            "The gateway is shutting down; retry after the indicated delay.", retry_after=self._retry_after
        )

    def weight(self, planned_reads: int) -> int:
        return max(1, min(self.capacity, math.ceil(planned_reads / self._reads_per_unit)))

    def _spare_s(self, deadline: float, now: float, hold_s: float) -> float:
        """How much longer a waiter may wait: its deadline must leave `hold_s` (expected_hold_s) for
        its read. At 0 or below it is too late."""
        return deadline - now - hold_s

    def expected_hold_s(self) -> float:
        """The longest of the recent decisions' times in a slot (0 before the first): a waiter is let
        in only if even that fits before its deadline. A long outlier passes with `recent` more."""
        return max(self._held_s, default=0.0)

    @asynccontextmanager
    async def slot(self, planned_reads: int, deadline: float | None = None) -> AsyncIterator[None]:
        """Hold `weight(planned_reads)` units for the block; wait in line, or raise Saturated (line
        full, no slot in time, or none before `deadline`, on the loop's clock, less the recent
        decisions' time in a slot) or Draining."""
        units = self.weight(planned_reads)
        if self.draining:
            raise self._draining()
        if self._waiters or self._free < units:
            await self._wait(units, deadline)
        else:
            self._take(units)
        self._metrics.inflight.inc()
        loop = asyncio.get_running_loop()
        granted_at = loop.time()
        failed: BaseException | None = None
        try:
            yield
        except BaseException as e:
            failed = e
            raise
        finally:
            # One answered, or cut at its deadline (it held the slot at least this long: a stuck
            # engine raises the estimate), counts; one cancelled by its client or failed says nothing
            # of how long decisions take.
            if failed is None or isinstance(failed, DeadlinePassed):
                self._held_s.append(loop.time() - granted_at)
            self._metrics.inflight.dec()
            self._give(units)

    def _saturated(self, reason: str, message: str) -> Saturated:
        self._metrics.shed.labels(reason).inc()
        return Saturated(message, retry_after=self._retry_after)

    async def _wait(self, units: int, deadline: float | None) -> None:
        if len(self._waiters) >= self._max_waiting:
            raise self._saturated("queue_full", "The gateway is saturated; retry after the indicated delay.")
        loop = asyncio.get_running_loop()
        limit, reason = self._max_wait_s, "queue_wait"
        if deadline is not None:
            left = self._spare_s(deadline, loop.time(), self.expected_hold_s())
            if left <= 0:
                raise self._saturated("deadline", _TOO_LATE)
            if limit is None or left < limit:
                limit, reason = left, "deadline"
        granted: asyncio.Future[None] = loop.create_future()
        entry = (units, granted, deadline)
        self._waiters.append(entry)
        self._metrics.queued.inc()
        try:
            async with asyncio.timeout(limit):
                await granted
        except (asyncio.CancelledError, TimeoutError) as e:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                self._give(units)  # granted in the same instant the client went away or time ran out
            else:
                if entry in self._waiters:
                    self._waiters.remove(entry)
                self._grant()  # it may have been the head that held others back
            if isinstance(e, TimeoutError):
                when = "in time to answer before the decision's deadline"
                if reason == "queue_wait":
                    when = f"within {self._max_wait_s:g} s"
                raise self._saturated(
                    reason, f"The gateway is saturated: no slot {when}; retry after the indicated delay."
                ) from None
            raise
        finally:
            self._metrics.queued.dec()

    def _take(self, units: int) -> None:
        self._free -= units
        self._metrics.units_in_use.set(self.capacity - self._free)

    def _give(self, units: int) -> None:
        self._free += units
        self._metrics.units_in_use.set(self.capacity - self._free)
        self._grant()

    def _grant(self) -> None:
        now, hold_s = asyncio.get_running_loop().time(), self.expected_hold_s()
        while self._waiters and self._waiters[0][0] <= self._free:
            units, granted, deadline = self._waiters.popleft()
            if granted.done():  # cancelled, its task not yet resumed
                continue
            if deadline is not None and self._spare_s(deadline, now, hold_s) <= 0:
                # Its turn came too late to be read before its deadline (the estimate may have grown
                # since it joined the line): turned away, and the slot goes to the next.
                granted.set_exception(self._saturated("deadline", _TOO_LATE))
                continue
            self._take(units)
            granted.set_result(None)
