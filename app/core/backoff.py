"""The one backoff of the kit's retry loops: exponential, from a base, capped; optionally with full
jitter, and optionally honouring the wait a server asked for (`Retry-After`, read by app/core/retry.py
into the failure's `retry_after`). It is a tenacity wait strategy (`wait=` of `AsyncRetrying`), and
`delays()` gives the same waits to a loop that decides by itself when to try again (the router's late
classification renews its claim between attempts). Its users: the Jev client's `Retry`, the router's
sinks, and the router's late path."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from tenacity import RetryCallState
from tenacity.wait import wait_base


@dataclass(frozen=True)
class Backoff(wait_base):
    """`base_s` after the first failed attempt, doubled after each one, never more than `cap_s`.
    With `jitter`, a random wait between 0 and that ("full jitter": uncoordinated clients spread out).
    With `retry_after_cap_s`, a failure that carries a `retry_after` (seconds the server asked for)
    waits that instead, up to `retry_after_cap_s`."""

    base_s: float
    cap_s: float
    jitter: bool = False
    retry_after_cap_s: float | None = None

    def delay(self, failures: int) -> float:
        """The longest wait after `failures` failed attempts (1 or more): without jitter, the wait."""
        return float(min(self.base_s * 2.0 ** min(failures - 1, 64), self.cap_s))  # 2**64: past any cap

    def wait(self, failures: int) -> float:
        """The wait after `failures` failed attempts, jittered if this backoff is."""
        longest = self.delay(failures)
        return random.uniform(0.0, longest) if self.jitter else longest

    def delays(self) -> Iterator[float]:
        """The waits after the first, second, ... failed attempt, without end."""
        return (self.wait(n) for n in itertools.count(1))

    def __call__(self, retry_state: RetryCallState) -> float:
        if self.retry_after_cap_s is not None:
            outcome = retry_state.outcome
            asked = getattr(outcome.exception() if outcome is not None else None, "retry_after", None)
            if asked is not None:
                return float(min(asked, self.retry_after_cap_s))
        return self.wait(retry_state.attempt_number)
