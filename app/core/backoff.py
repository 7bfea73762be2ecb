"""The one backoff of the kit's own retry loops: exponential, from a base, capped. It is a tenacity wait
strategy (`wait=` of `AsyncRetrying`), and `delays()` gives the same waits to a loop that decides by
itself when to try again (the router's late classification renews its claim between attempts)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from tenacity import RetryCallState
from tenacity.wait import wait_base


@dataclass(frozen=True)
class Backoff(wait_base):
    """`base_s` after the first failed attempt, doubled after each one, never more than `cap_s`."""

    base_s: float
    cap_s: float

    def delay(self, failures: int) -> float:
        """The wait after `failures` failed attempts (1 or more)."""
        return float(min(self.base_s * 2.0 ** min(failures - 1, 64), self.cap_s))  # 2**64: past any cap

    def delays(self) -> Iterator[float]:
        """The waits after the first, second, ... failed attempt, without end."""
        return (self.delay(n) for n in itertools.count(1))

    def __call__(self, retry_state: RetryCallState) -> float:
        return self.delay(retry_state.attempt_number)
