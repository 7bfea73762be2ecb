"""Admission: a FIFO of decisions weighted by the engine reads they plan; 429 beyond the queue."""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.errors import Saturated
from app.observability import Metrics


class Admission:
    """`capacity` units read at once, `queued` decisions wait, first come first served.

    A decision weighs one unit per started `reads_per_unit` planned reads (at most the whole
    capacity), so one request planning thousands of reads cannot hold the engine while it counts as
    one decision. The queue is strict FIFO: a heavy decision at its head is not starved by light ones.
    """

    def __init__(
        self, capacity: int, queued: int, reads_per_unit: int, retry_after_s: int, metrics: Metrics
    ) -> None:
        self.capacity = capacity
        self._free = capacity
        self._max_waiting = queued
        self._reads_per_unit = reads_per_unit
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        self._retry_after = retry_after_s
        self._metrics = metrics

    def weight(self, planned_reads: int) -> int:
        return max(1, min(self.capacity, math.ceil(planned_reads / self._reads_per_unit)))

    @asynccontextmanager
    async def slot(self, planned_reads: int) -> AsyncIterator[None]:
        """Hold `weight(planned_reads)` units for the block; wait in line, or raise Saturated."""
        units = self.weight(planned_reads)
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
            raise Saturated(
                "The gateway is saturated; retry after the indicated delay.", retry_after=self._retry_after
            )
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (units, granted)
        self._waiters.append(entry)
        self._metrics.queued.inc()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._give(units)  # granted in the same instant the client went away
            else:
                if entry in self._waiters:
                    self._waiters.remove(entry)
                self._grant()  # it may have been the head that held others back
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
