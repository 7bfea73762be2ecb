"""The one backoff: doubling from a base up to a cap, full jitter under that, and a server's
`Retry-After` (a failure's `retry_after`) honoured up to its own cap."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest

from app.core.backoff import Backoff

pytestmark = pytest.mark.unit


class Shed(Exception):
    def __init__(self, retry_after: float | None) -> None:
        super().__init__("shed")
        self.retry_after = retry_after


def state(error: Exception, attempt: int = 1) -> Any:
    """What tenacity hands a wait: the attempt's number and its outcome."""
    return SimpleNamespace(outcome=SimpleNamespace(exception=lambda: error), attempt_number=attempt)


def test_the_waits_double_from_the_base_to_the_cap() -> None:
    backoff = Backoff(2.0, 60.0)
    assert list(itertools.islice(backoff.delays(), 7)) == [2, 4, 8, 16, 32, 60, 60]
    assert backoff(state(Shed(None), 3)) == 8 and backoff.delay(10_000) == 60


def test_full_jitter_stays_under_the_delay() -> None:
    backoff = Backoff(0.5, 8.0, jitter=True)
    for n in range(1, 12):
        assert all(0 <= backoff.wait(n) <= backoff.delay(n) for _ in range(50))
    assert len({backoff.wait(6) for _ in range(20)}) > 1


def test_a_retry_after_is_waited_up_to_its_cap_and_only_where_asked_for() -> None:
    honours = Backoff(0.5, 8.0, jitter=True, retry_after_cap_s=60.0)
    assert honours(state(Shed(30))) == 30.0 and honours(state(Shed(120))) == 60.0
    assert 0 <= honours(state(Shed(None), 4)) <= 4.0  # none asked for: the backoff's own
    assert Backoff(0.5, 8.0)(state(Shed(30))) == 0.5  # this backoff reads no Retry-After
