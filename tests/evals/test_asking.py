"""The one way every eval asks the gateway: answers in item order, never more than `concurrency`
at once, and the first failure raised with nothing left running."""

from __future__ import annotations

import asyncio

import pytest

from evals.asking import each

pytestmark = pytest.mark.unit


async def test_answers_keep_the_items_order_within_the_concurrency() -> None:
    running, most, done = 0, 0, []

    async def ask(n: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.001 * (5 - n % 5))  # later items finish first
        running -= 1
        return n * 10

    answers = await each(list(range(12)), ask, concurrency=3, progress=lambda: done.append(1))
    assert answers == [n * 10 for n in range(12)] and most == 3 and len(done) == 12


async def test_the_first_failure_is_raised_and_cancels_the_rest() -> None:
    started, cancelled = [], []

    async def ask(n: int) -> int:
        started.append(n)
        if n == 0:
            raise RuntimeError("no answer")
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return n

    with pytest.raises(RuntimeError, match="no answer"):
        await each(list(range(6)), ask, concurrency=2)
    await asyncio.sleep(0)
    assert sorted(cancelled) == started[1:] and len(started) < 6  # none left running, not all begun
