"""Admission: weights by planned reads, strict FIFO, 429 beyond the queue, cancellation."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest

from app.core.errors import DeadlinePassed, Draining, Saturated
from app.gateway.admission import Admission
from app.gateway.metrics import Metrics

pytestmark = pytest.mark.unit


def _admission(capacity: int = 4, queued: int = 8) -> tuple[Admission, Metrics]:
    metrics = Metrics()
    return Admission(capacity, queued, reads_per_unit=64, retry_after_s=3, metrics=metrics), metrics


def _gauge(metrics: Metrics, name: str) -> float:
    value = metrics.registry.get_sample_value(name)
    assert value is not None
    return value


def test_weight_is_one_unit_per_started_engine_call_capped_at_capacity() -> None:
    admission, _ = _admission(capacity=4)
    assert [admission.weight(r) for r in (0, 1, 64, 65, 128, 129, 10**6)] == [1, 1, 1, 2, 2, 3, 4]


async def _hold(admission: Admission, reads: int, log: list[str], name: str, release: asyncio.Event) -> None:
    async with admission.slot(reads):
        log.append(name)
        await release.wait()


async def _settle() -> None:
    """Let every ready task run until it waits again (event-loop turns, not wall time)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_strict_fifo_a_heavy_head_is_not_starved() -> None:
    admission, metrics = _admission(capacity=4)
    log: list[str] = []
    gates = {n: asyncio.Event() for n in "ABC"}
    a = asyncio.create_task(_hold(admission, 3 * 64, log, "A", gates["A"]))  # 3 units
    await asyncio.sleep(0)
    b = asyncio.create_task(_hold(admission, 2 * 64, log, "B", gates["B"]))  # 2: must wait for A
    c = asyncio.create_task(_hold(admission, 1, log, "C", gates["C"]))  # 1 would fit, but B is first
    await _settle()
    assert log == ["A"] and _gauge(metrics, "dgemma_decisions_queued") == 2
    gates["A"].set()
    await _settle()
    assert log == ["A", "B", "C"]  # B (2) and C (1) fit together once A is gone
    assert _gauge(metrics, "dgemma_admission_units_in_use") == 3
    gates["B"].set()
    gates["C"].set()
    await asyncio.gather(a, b, c)
    assert _gauge(metrics, "dgemma_admission_units_in_use") == 0
    assert _gauge(metrics, "dgemma_decisions_inflight") == 0


async def test_beyond_the_queue_is_saturated_with_retry_after() -> None:
    admission, _ = _admission(capacity=1, queued=1)
    release = asyncio.Event()
    log: list[str] = []
    held = asyncio.create_task(_hold(admission, 1, log, "held", release))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(_hold(admission, 1, log, "waiting", release))
    await asyncio.sleep(0)
    with pytest.raises(Saturated) as e:
        async with admission.slot(1):
            pass
    assert e.value.retry_after == 3
    release.set()
    await asyncio.gather(held, waiting)
    assert log == ["held", "waiting"]


async def test_a_cancelled_waiter_leaves_the_line_and_frees_those_behind() -> None:
    admission, metrics = _admission(capacity=2)
    log: list[str] = []
    release = asyncio.Event()
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(admission.slot(64))  # one of two units taken
        heavy = asyncio.create_task(_hold(admission, 128, log, "heavy", release))  # needs both
        light = asyncio.create_task(_hold(admission, 1, log, "light", release))  # behind heavy
        await _settle()
        assert log == []
        heavy.cancel()  # its client went away
        await _settle()
        assert log == ["light"], "the light one fits beside the held unit once the heavy head is gone"
        release.set()
        await light
        with pytest.raises(asyncio.CancelledError):
            await heavy
    assert _gauge(metrics, "dgemma_admission_units_in_use") == 0
    assert _gauge(metrics, "dgemma_decisions_queued") == 0


async def test_draining_turns_away_the_line_and_newcomers_while_holders_finish() -> None:
    admission, metrics = _admission(capacity=2)
    log: list[str] = []
    release = asyncio.Event()
    holders = [asyncio.create_task(_hold(admission, 1, log, n, release)) for n in ("A", "B")]
    await _settle()
    waiting = asyncio.create_task(_hold(admission, 1, log, "C", release))
    await _settle()
    assert log == ["A", "B"] and not admission.idle

    admission.drain()
    with pytest.raises(Draining) as turned_away:
        await waiting
    assert turned_away.value.retry_after == 3
    with pytest.raises(Draining):
        async with admission.slot(1):
            pass
    assert not admission.idle, "A and B still hold their slots"
    release.set()
    await asyncio.gather(*holders)
    assert log == ["A", "B"] and admission.idle
    assert (
        _gauge(metrics, "dgemma_decisions_queued") == 0 and _gauge(metrics, "dgemma_decisions_inflight") == 0
    )


async def test_a_decision_waits_no_longer_than_the_wait_limit() -> None:
    metrics = Metrics()
    admission = Admission(1, 8, reads_per_unit=64, retry_after_s=3, metrics=metrics, max_wait_s=0.05)
    log: list[str] = []
    release = asyncio.Event()
    holder = asyncio.create_task(_hold(admission, 1, log, "A", release))
    await _settle()
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(Saturated, match=r"no slot within 0.05 s") as shed:
        async with admission.slot(1):
            pass
    assert 0.05 <= loop.time() - started < 1 and shed.value.retry_after == 3
    assert _gauge(metrics, "dgemma_decisions_queued") == 0
    assert metrics.registry.get_sample_value("dgemma_decisions_shed_total", {"reason": "queue_wait"}) == 1
    # The line is clean: the next decision gets the slot as soon as A gives it back.
    nxt = asyncio.create_task(_hold(admission, 1, log, "B", release))
    await _settle()
    release.set()
    await asyncio.gather(holder, nxt)
    assert log == ["A", "B"] and admission.idle


async def test_the_expected_hold_is_the_longest_of_the_recent_finished_ones() -> None:
    admission, _ = _admission(capacity=1)
    assert admission.expected_hold_s() == 0.0, "no estimate before the first decision"
    loop = asyncio.get_running_loop()
    for seconds in (0.01, 0.08, 0.01):
        async with admission.slot(1):
            await asyncio.sleep(seconds)
    assert 0.08 <= admission.expected_hold_s() < 0.5, "the longest sets it"
    started = loop.time()
    with pytest.raises(RuntimeError):
        async with admission.slot(1):
            await asyncio.sleep(0.3)
            raise RuntimeError("the engine failed")  # a decision cut short says nothing of the rest
    assert loop.time() - started >= 0.3 and admission.expected_hold_s() < 0.3
    with pytest.raises(DeadlinePassed):  # cut at its client's timeout, it held the slot that long
        async with admission.slot(1):
            await asyncio.sleep(0.3)
            raise DeadlinePassed("cut", retry_after=3)
    assert admission.expected_hold_s() >= 0.3
    for _ in range(16):  # an outlier passes
        async with admission.slot(1):
            pass
    assert admission.expected_hold_s() < 0.05


async def test_a_waiter_is_turned_away_once_its_deadline_leaves_less_than_a_decision_takes() -> None:
    admission, metrics = _admission(capacity=1)
    async with admission.slot(1):
        await asyncio.sleep(0.2)  # one decision took 0.2 s
    log: list[str] = []
    release = asyncio.Event()
    holder = asyncio.create_task(_hold(admission, 1, log, "A", release))
    await _settle()
    loop = asyncio.get_running_loop()
    with pytest.raises(Saturated, match="before the decision's deadline") as at_once:
        async with admission.slot(1, deadline=loop.time() + 0.15):  # less than 0.2 s left
            pass
    assert at_once.value.retry_after == 3
    started = loop.time()
    with pytest.raises(Saturated, match="in time to answer before the decision's deadline"):
        async with admission.slot(1, deadline=started + 0.5):  # waits until 0.3 s, then gives up
            pass
    waited = loop.time() - started
    assert 0.25 <= waited < 0.45, waited
    shed = metrics.registry.get_sample_value("dgemma_decisions_shed_total", {"reason": "deadline"})
    assert shed == 2 and _gauge(metrics, "dgemma_decisions_queued") == 0
    late = asyncio.create_task(_hold(admission, 1, log, "B", release))  # time enough: it waits its turn
    await _settle()
    release.set()
    await asyncio.gather(holder, late)
    assert log == ["A", "B"] and admission.idle
