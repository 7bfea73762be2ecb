"""Admission: a FIFO of decisions weighted by the engine reads they plan; 429 beyond the queue."""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.core.errors import Draining, Saturated
from app.gateway.metrics import Metrics


class Admission:
    """`capacity` units read at once, `queued` decisions wait, first come first served, each for
    at most `max_wait_s` (then 429: a client past its deadline has stopped waiting anyway).

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
    ) -> None:
        self.capacity = capacity
        self._free = capacity
        self._max_waiting = queued
        self._reads_per_unit = reads_per_unit
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        self._retry_after = retry_after_s
        self._metrics = metrics
        self._max_wait_s = max_wait_s
        self.draining = False

    def drain(self) -> None:
        """Take no new decision (503), and turn away those waiting in line; those holding a slot
        finish. Called once the service is told to stop."""
        self.draining = True
        while self._waiters:
            _, granted = self._waiters.popleft()
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

    @asynccontextmanager
    async def slot(self, planned_reads: int) -> AsyncIterator[None]:
        """Hold `weight(planned_reads)` units for the block; wait in line, or raise Saturated (line
        full, or no slot in time) or Draining."""
        units = self.weight(planned_reads)
        if self.draining:
            raise self._draining()
        if self._waiters or self._free < units:
            await self._wait(units)
        else:
            self._take(units)
        self._metrics.inflight.inc()
        try:
            yield
        finally:
            self._metrics.inflight.dec()
            self._give(units)

    async def _wait(self, units: int) -> None:
        if len(self._waiters) >= self._max_waiting:
            self._metrics.shed.labels("queue_full").inc()
            raise Saturated(
                "The gateway is saturated; retry after the indicated delay.", retry_after=self._retry_after
            )
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (units, granted)
        self._waiters.append(entry)
        self._metrics.queued.inc()
        try:
            async with asyncio.timeout(self._max_wait_s):
                await granted
        except (asyncio.CancelledError, TimeoutError) as e:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                self._give(units)  # granted in the same instant the client went away or time ran out
            else:
                if entry in self._waiters:
                    self._waiters.remove(entry)
                self._grant()  # it may have been the head that held others back
            if isinstance(e, TimeoutError):
                self._metrics.shed.labels("queue_wait").inc()
                raise Saturated(
                    f"The gateway is saturated: no slot within {self._max_wait_s:g} s; retry after the "
                    "indicated delay.",
                    retry_after=self._retry_after,
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
        while self._waiters and self._waiters[0][0] <= self._free:
            units, granted = self._waiters.popleft()
            if granted.done():  # cancelled, its task not yet resumed
                continue
            self._take(units)
            granted.set_result(None)
