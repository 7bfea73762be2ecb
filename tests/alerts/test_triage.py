"""The alert router in process: its webhooks called through httpx's ASGI transport, the decision
service the real gateway app (in process too) over a scripted engine whose answers each test
chooses per alert, the sinks recorders. These test the router's own orchestration: which sinks get
what, when, how often; never that the model's answers are right."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from app.alerts.main import create_router_app
from app.alerts.policy import Policy
from app.alerts.settings import AlertRouterSettings
from app.alerts.store import GcsStore, MemoryStore, ObjectStore
from app.core.errors import EngineUnavailable
from app.gateway.decisions.calibration_file import Calibration, Fit
from app.jev.wire import ReadPolicy
from tests.helpers.alerts import (
    DATA,
    ROUTER_POLICY,
    CountingGateway,
    Stack,
    StackFactory,
    router_policy,
    router_stacks,
    write_policy,
)

pytestmark = pytest.mark.inprocess


@pytest.fixture
async def make_stack(tmp_path: Path) -> AsyncIterator[StackFactory]:
    async with router_stacks(write_policy(tmp_path, ROUTER_POLICY)) as make:
        yield make


async def test_the_thresholds_meet_the_gateways_calibrated_probabilities(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    """p(page) 0.6 is in the uncertain band raw; a gateway serving T = 0.4 for nouls reads it as
    0.6^2.5 / (0.6^2.5 + 0.4^2.5) = 0.734, above the page threshold (0.7), and the page says so."""
    cal = Calibration(
        model="dgemma",
        read_policy=ReadPolicy(),  # the gateway's default, which the router asks under
        by_name={},
        by_type={"noul": Fit(type="noul", temperature=0.4, samples=99, nll_before=1, nll_after=1)},
        data={"path": "test"},
    )
    path = tmp_path / "calibration.json"
    path.write_text(cal.model_dump_json())
    raw, calibrated = make_stack(), make_stack(gateway_overrides={"calibration_file": path})
    for stack in (raw, calibrated):
        stack.engine.verdicts["DiskFull"] = (0.6, 0.95, "warning")
        assert (await stack.fire(("DiskFull", "f1"))).status_code == 200
    before, after = raw.pages("db-pager")[0], calibrated.pages("db-pager")[0]
    assert before.low_confidence and not before.calibrated and "(calibrated)" not in before.reason
    assert before.answers["page"]["noul"] == pytest.approx(0.6, abs=1e-6)
    assert after.answers["page"]["noul"] == pytest.approx(0.6**2.5 / (0.6**2.5 + 0.4**2.5), abs=1e-6)
    assert not after.low_confidence and after.calibrated
    assert after.reason == "p(page) 0.73 >= 0.7 (calibrated)"


async def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


# -- classified pages ------------------------------------------------------------------------------


async def test_a_classified_page_goes_to_every_sink_of_the_team_route(make_stack: StackFactory) -> None:
    s = make_stack()
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    r = await s.fire(("DiskFull", "f1"))
    assert r.status_code == 200, r.text
    assert r.json() == {"received": 1, "truncated": 0, "outcomes": {"page": 1}}
    assert s.delivered() == {"db-pager": 1, "db-chat": 1}
    page = s.pages("db-pager")[0]
    assert (page.action, page.route, page.severity, page.classified, page.low_confidence) == (
        "page",
        "database",
        "error",
        True,
        False,
    )
    assert page.alert.key == "alertmanager:f1"
    assert page.answers["page"]["noul"] == pytest.approx(0.9, abs=1e-6)
    # The router asked the gateway the policy's three questions (as reads of the engine).
    asked = {q["type"] for call in s.engine.calls for q in call["questions"].values()}
    assert asked == {"noul", "choice", "score"}


@pytest.mark.parametrize(
    ("p_page", "level", "action", "sinks", "low_confidence"),
    [
        (0.70, "info", "page", {"db-pager": 1, "db-chat": 1}, False),  # at the page threshold
        (0.55, "info", "page", {"db-pager": 1, "db-chat": 1}, True),  # the uncertain band pages
        (0.40, "warning", "page", {"db-pager": 1, "db-chat": 1}, True),
        (0.39, "warning", "ticket", {"tickets": 1}, False),
        (0.15, "info", "ticket", {"tickets": 1}, False),
        (0.14, "info", "drop", {}, False),
        (0.05, "critical", "page", {"db-pager": 1, "db-chat": 1}, False),  # severity overrides p(page)
    ],
)
async def test_thresholds_choose_page_ticket_or_drop(
    make_stack: StackFactory,
    p_page: float,
    level: str,
    action: str,
    sinks: dict[str, int],
    low_confidence: bool,
) -> None:
    s = make_stack()
    s.engine.verdicts["A"] = (p_page, 0.9, level)
    r = await s.fire(("A", "f1"))
    assert r.json()["outcomes"] == {action: 1}
    assert s.delivered() == sinks
    for name in sinks:
        assert s.pages(name)[0].low_confidence is low_confidence
        assert s.pages(name)[0].action == action


async def test_each_alert_goes_to_the_route_of_its_likeliest_team(make_stack: StackFactory) -> None:
    s = make_stack()
    s.engine.verdicts["Flap"] = (0.9, 0.45, "error")  # network at 0.55, database 0.45
    s.engine.verdicts["Lag"] = (0.9, 0.6, "error")
    await s.fire(("Flap", "f1"), ("Lag", "f2"))
    assert s.delivered() == {"net-pager": 1, "db-pager": 1, "db-chat": 1}


async def test_below_team_confidence_the_fallback_route_gets_it(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "strict.toml", router_policy({"team_confidence": 0.8}))
    s = make_stack(alerts_policy_file=policy)
    s.router.policy = Policy.load(policy)
    s.engine.verdicts["Flap"] = (0.9, 0.7, "error")
    await s.fire(("Flap", "f1"))
    assert s.delivered() == {"oncall-pager": 1}
    page = s.pages("oncall-pager")[0]
    assert page.classified and page.low_confidence and "fallback route" in page.reason


# -- the decision service slow, down, refusing -----------------------------------------------------


async def test_past_the_budget_the_page_goes_out_unclassified_then_is_updated(
    make_stack: StackFactory,
) -> None:
    s = make_stack(alerts_decision_budget_s=0.3)
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    s.engine.hold = asyncio.Event()
    # The decision never comes (held): only the budget can end the sender's wait.
    r = await asyncio.wait_for(s.fire(("DiskFull", "f1")), 10)
    assert r.status_code == 200 and r.json()["outcomes"] == {"fallback": 1}
    assert s.delivered() == {"oncall-pager": 1}
    first = s.pages("oncall-pager")[0]
    assert not first.classified and "0.3 s" in first.reason
    s.engine.hold.set()
    await eventually(lambda: len(s.pages("oncall-pager")) == 2)
    update = s.pages("oncall-pager")[1]
    assert update.classified and update.alert.key == first.alert.key  # the same incident, updated
    assert "classified late: page, route database" in update.reason
    assert s.delivered() == {"oncall-pager": 2}  # the team's sinks are not paged a second time
    await eventually(lambda: not s.router._later)
    # A repeat of the delivery afterwards pages nobody.
    r = await s.fire(("DiskFull", "f1"))
    assert r.json()["outcomes"] == {"duplicate": 1}
    assert s.delivered() == {"oncall-pager": 2}


async def test_a_service_that_is_down_pages_at_once_and_updates_when_it_is_back(
    make_stack: StackFactory,
) -> None:
    s = make_stack(alerts_decision_budget_s=30.0)
    s.engine.verdicts["DiskFull"] = (0.1, 0.95, "info")
    s.engine.fail = EngineUnavailable("the engine is starting")
    started = time.perf_counter()
    r = await s.fire(("DiskFull", "f1"))
    assert r.json()["outcomes"] == {"fallback": 1}
    assert time.perf_counter() - started < 10  # a 503 is not waited out for the 30 s budget
    assert "503" in s.pages("oncall-pager")[0].reason
    asked = len(s.engine.calls)
    await eventually(lambda: len(s.engine.calls) >= asked + 2)  # still down: asked again, and again
    assert len(s.pages("oncall-pager")) == 1  # nothing sent meanwhile
    s.engine.fail = None
    await eventually(lambda: len(s.pages("oncall-pager")) == 2)
    update = s.pages("oncall-pager")[1]
    # The model would have dropped it: the open page is updated with that, never withdrawn.
    assert update.classified and update.action == "page" and "classified late: drop" in update.reason


async def test_a_service_not_ready_is_polled_before_it_is_asked(make_stack: StackFactory) -> None:
    s = make_stack()
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    s.engine.fail = EngineUnavailable("starting")
    s.engine.is_healthy = False
    await s.fire(("DiskFull", "f1"))
    calls, polls = len(s.engine.calls), s.engine.health_checks
    await eventually(lambda: s.engine.health_checks >= polls + 2)  # polled, again and again...
    assert len(s.engine.calls) == calls  # ...and, not ready, never asked
    s.engine.fail, s.engine.is_healthy = None, True
    await eventually(lambda: len(s.pages("oncall-pager")) == 2)


async def test_a_refused_classification_pages_with_the_reason_and_is_not_retried(
    make_stack: StackFactory,
) -> None:
    s = make_stack(gateway_keys="another-key")  # the router's key is wrong: 401 from the gateway
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    r = await s.fire(("DiskFull", "f1"))
    assert r.json()["outcomes"] == {"fallback": 1}
    page = s.pages("oncall-pager")[0]
    assert not page.classified and "classification refused" in page.reason and "401" in page.reason
    assert not s.router._later  # a configuration problem: retrying would not help
    assert s.engine.calls == []


# -- never lost, never twice -----------------------------------------------------------------------


async def test_a_failing_sink_gets_the_page_on_the_senders_retry_and_only_once(
    make_stack: StackFactory,
) -> None:
    s = make_stack()
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    s.sinks["db-chat"].fail = 2
    for _ in range(2):  # the sender retries a 502
        r = await s.fire(("DiskFull", "f1"))
        assert r.status_code == 502, r.text
        assert "db-chat" in r.json()["detail"]
    r = await s.fire(("DiskFull", "f1"))
    assert r.status_code == 200 and r.json()["outcomes"] == {"duplicate": 1}
    assert s.delivered() == {"db-pager": 1, "db-chat": 1}
    assert s.sinks["db-pager"].attempts == 1 and s.sinks["db-chat"].attempts == 3


async def test_the_decision_is_asked_once_across_retries(make_stack: StackFactory) -> None:
    s = make_stack(gateway_class=CountingGateway)
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    s.sinks["db-pager"].fail = 1
    assert (await s.fire(("DiskFull", "f1"))).status_code == 502
    calls = len(s.engine.calls)
    assert (await s.fire(("DiskFull", "f1"))).status_code == 200
    assert len(s.engine.calls) == calls
    assert s.delivered() == {"db-pager": 1, "db-chat": 1}


async def test_one_failing_alert_does_not_hold_back_the_rest_of_its_group(make_stack: StackFactory) -> None:
    s = make_stack()
    s.engine.verdicts |= {"DiskFull": (0.9, 0.95, "error"), "Flap": (0.9, 0.05, "error")}
    s.sinks["db-pager"].fail = 1
    r = await s.fire(("DiskFull", "f1"), ("Flap", "f2"))
    assert r.status_code == 502 and "alertmanager:f1" in r.json()["detail"]
    assert s.delivered() == {"db-chat": 1, "net-pager": 1}
    r = await s.fire(("DiskFull", "f1"), ("Flap", "f2"))
    assert r.status_code == 200 and r.json()["outcomes"] == {"duplicate": 2}
    assert s.delivered() == {"db-pager": 1, "db-chat": 1, "net-pager": 1}


async def test_the_same_alert_delivered_twice_at_once_pages_once(make_stack: StackFactory) -> None:
    s = make_stack()
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    s.engine.delay_s = 0.1
    a, b = await asyncio.gather(s.fire(("DiskFull", "f1")), s.fire(("DiskFull", "f1")))
    assert sorted([a.json()["outcomes"], b.json()["outcomes"]], key=str) == [{"duplicate": 1}, {"page": 1}]
    assert s.delivered() == {"db-pager": 1, "db-chat": 1}
    assert len(s.router._locks) == 0  # no lock outlives its alert's deliveries


async def test_a_group_is_classified_with_bounded_concurrency(make_stack: StackFactory) -> None:
    s = make_stack(gateway_class=CountingGateway, alerts_max_concurrency=3)
    alerts = [(f"A{i}", f"f{i}") for i in range(12)]
    for title, _ in alerts:
        s.engine.verdicts[title] = (0.9, 0.95, "error")
    s.engine.delay_s = 0.02
    r = await s.fire(*alerts)
    assert r.json()["outcomes"] == {"page": 12}
    assert s.router.gateway.peak == 3
    assert s.delivered() == {"db-pager": 12, "db-chat": 12}


# -- resolution ------------------------------------------------------------------------------------


async def test_a_resolution_goes_to_the_sinks_that_got_the_page(make_stack: StackFactory) -> None:
    s = make_stack()
    s.engine.verdicts |= {"DiskFull": (0.9, 0.95, "error"), "Noise": (0.01, 0.95, "info")}
    await s.fire(("DiskFull", "f1"), ("Noise", "f2"))
    r = await s.resolve(("DiskFull", "f1"), ("Noise", "f2"))
    assert r.json()["outcomes"] == {"resolved": 2}
    got = {name: [a.key for a in sink.resolved] for name, sink in s.sinks.items() if sink.resolved}
    assert got == {"db-pager": ["alertmanager:f1"], "db-chat": ["alertmanager:f1"]}  # the dropped: none
    # A repeat of the resolution resolves nothing twice; an unknown alert's goes to the fallback route.
    await s.resolve(("DiskFull", "f1"), ("Unseen", "f9"))
    got = {name: [a.key for a in sink.resolved] for name, sink in s.sinks.items() if sink.resolved}
    assert got == {
        "db-pager": ["alertmanager:f1"],
        "db-chat": ["alertmanager:f1"],
        "oncall-pager": ["alertmanager:f9"],
    }


async def test_an_alert_that_fires_again_after_its_resolution_pages_again(make_stack: StackFactory) -> None:
    s = make_stack()
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    await s.fire(("DiskFull", "f1"))
    await s.fire(("DiskFull", "f1"))  # a repeat: nothing
    await s.resolve(("DiskFull", "f1"))
    late = await s.fire(("DiskFull", "f1"))  # the first episode's late retry: already resolved
    assert late.json()["outcomes"] == {"duplicate": 1}
    r = await s.fire(("DiskFull", "f1"), starts_at="2030-01-01T00:00:00Z")  # it fires again
    assert r.json()["outcomes"] == {"page": 1}
    assert s.delivered() == {"db-pager": 2, "db-chat": 2}


async def test_a_resolution_cancels_the_pending_classification(make_stack: StackFactory) -> None:
    s = make_stack(alerts_decision_budget_s=0.2)
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    s.engine.hold = asyncio.Event()
    await s.fire(("DiskFull", "f1"))
    (pending,) = s.router._later.values()
    await s.resolve(("DiskFull", "f1"))
    await asyncio.wait({pending}, timeout=5)
    assert pending.cancelled()  # not left waking the service for nothing
    assert [a.key for a in s.sinks["oncall-pager"].resolved] == ["alertmanager:f1"]
    assert not s.router._later
    s.engine.hold.set()
    await asyncio.sleep(0.2)
    assert len(s.pages("oncall-pager")) == 1  # no update for a resolved alert


# -- two routers, one ledger (two instances, or two revisions in a rollout) -------------------------


@pytest.fixture(params=["memory", "gcs"])
def shared(request: pytest.FixtureRequest) -> ObjectStore:
    """One ledger store for two routers: in memory (the contract), and on the GCS emulator."""
    if request.param == "memory":
        return MemoryStore()
    client = request.getfixturevalue("gcs")
    if client.lookup_bucket("ledger") is None:
        client.create_bucket("ledger")
    return GcsStore(f"gs://ledger/triage-{uuid.uuid4().hex[:8]}", client)


def two(make_stack: StackFactory, store: ObjectStore, **overrides: Any) -> tuple[Stack, Stack]:
    a = make_stack(store=store, **overrides)
    b = make_stack(store=store, sinks=a.sinks, **overrides)
    for s in (a, b):
        s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    return a, b


async def test_the_same_delivery_to_two_routers_at_once_pages_once(
    make_stack: StackFactory, shared: ObjectStore
) -> None:
    a, b = two(make_stack, shared)
    ra, rb = await asyncio.gather(a.fire(("DiskFull", "f1")), b.fire(("DiskFull", "f1")))
    assert ra.status_code == rb.status_code == 200, (ra.text, rb.text)
    outcomes = sorted([*ra.json()["outcomes"], *rb.json()["outcomes"]])
    assert outcomes == ["duplicate", "page"]
    assert a.delivered() == {"db-pager": 1, "db-chat": 1}


async def test_a_sink_that_failed_is_retried_only_for_that_sink_by_the_other_router(
    make_stack: StackFactory, shared: ObjectStore
) -> None:
    a, b = two(make_stack, shared)
    a.sinks["db-chat"].fail = 1
    assert (await a.fire(("DiskFull", "f1"))).status_code == 502
    r = await b.fire(("DiskFull", "f1"))  # the sender's retry reaches the other instance
    assert r.status_code == 200 and r.json()["outcomes"] == {"duplicate": 1}
    assert a.delivered() == {"db-pager": 1, "db-chat": 1}
    assert a.engine.asked and not b.engine.asked  # the retry delivered the page decided, unasked


async def test_a_resolution_through_the_other_router_reaches_the_sinks_of_the_page(
    make_stack: StackFactory, shared: ObjectStore
) -> None:
    a, b = two(make_stack, shared)
    await a.fire(("DiskFull", "f1"))
    await a.router.aclose()  # that instance is gone
    assert (await b.resolve(("DiskFull", "f1"))).status_code == 200
    got = {name: [x.key for x in s.resolved] for name, s in a.sinks.items() if s.resolved}
    assert got == {"db-pager": ["alertmanager:f1"], "db-chat": ["alertmanager:f1"]}  # not oncall's


async def test_a_fallback_page_is_classified_by_the_other_router_once_its_instance_is_gone(
    make_stack: StackFactory, shared: ObjectStore
) -> None:
    a, b = two(make_stack, shared, alerts_decision_budget_s=0.2, alerts_ledger_claim_s=1)
    a.engine.hold = asyncio.Event()  # the service does not answer a
    await a.fire(("DiskFull", "f1"))
    assert len(a.pages("oncall-pager")) == 1 and a.router._later
    await a.router.aclose()  # its classification dies with it (its claim released)
    assert not a.pages("db-pager") and len(a.pages("oncall-pager")) == 1
    await b.router._scan()  # what b does at start, on a delivery, and every scan_s
    (task,) = b.router._later.values()
    await asyncio.wait_for(task, 10)
    (first, update) = a.pages("oncall-pager")
    assert not first.classified and update.classified and update.alert.key == first.alert.key
    assert update.reason.startswith("classified late:")
    assert b.router.metrics.registry.get_sample_value("dgemma_alerts_resumed_total") == 1
    await b.router._scan()
    assert not b.router._later  # done: nothing pending any more
    assert len(a.pages("oncall-pager")) == 2


class Stalled(MemoryStore):
    """A store whose every call hangs (as over a partition or a stalled connection) until
    `answering` is set, then answers as memory."""

    def __init__(self) -> None:
        super().__init__()
        self.answering = asyncio.Event()
        self.calls = 0

    async def _wait(self) -> None:
        self.calls += 1
        await self.answering.wait()

    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        await self._wait()
        return await super().create(name, body)

    async def read(self, name: str) -> Any:
        await self._wait()
        return await super().read(name)

    async def replace(self, name: str, body: dict[str, Any], generation: int) -> int | None:
        await self._wait()
        return await super().replace(name, body, generation)

    async def names(self, prefix: str) -> list[str]:
        await self._wait()
        return await super().names(prefix)

    async def delete(self, name: str) -> None:
        await self._wait()
        await super().delete(name)


async def test_a_store_that_does_not_answer_costs_a_page_its_deadline_not_more(
    make_stack: StackFactory,
) -> None:
    """The delivery's deadline: budget 0.5 s plus the store's 0.3 s. Without it the store's first
    call never returns (the wait_for below fails the test)."""
    store = Stalled()
    s = make_stack(store=store, alerts_decision_budget_s=0.5, alerts_ledger_timeout_s=0.3)
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    started = time.monotonic()
    r = await asyncio.wait_for(s.fire(("DiskFull", "f1")), 10)
    took = time.monotonic() - started
    assert r.status_code == 200 and r.json()["outcomes"] == {"page": 1}
    assert took < 0.5 + 0.3 + 0.5, took  # the deadline, and slack for a loaded machine
    assert s.delivered() == {"db-pager": 1, "db-chat": 1}
    # Away now: the next alerts are routed from memory at once, the store not asked.
    calls = store.calls
    assert (await s.fire(("DiskFull", "f1"))).json()["outcomes"] == {"duplicate": 1}  # this process knows
    assert (await s.fire(("DiskFull", "f2"))).json()["outcomes"] == {"page": 1}
    assert store.calls == calls
    value = s.router.metrics.registry.get_sample_value
    failed = value("dgemma_alerts_ledger_failures_total", {"operation": "list"})
    assert failed is not None and failed >= 1  # the delivery's listing (and the scan's)
    memory = "dgemma_alerts_ledger_memory_total"
    assert value(memory, {"outcome": "page"}) == 2 and value(memory, {"outcome": "duplicate"}) == 1
    backlog = value("dgemma_alerts_ledger_backlog")
    assert value("dgemma_alerts_ledger_up") == 0 and backlog is not None and backlog > 0


async def test_what_was_decided_from_memory_reaches_the_store_once_it_answers(
    make_stack: StackFactory,
) -> None:
    """A page sent from memory is written to the store when it answers again: the next router
    (another instance) finds it and pages nothing; the first one's backlog is empty."""
    store = Stalled()
    a = make_stack(store=store, alerts_decision_budget_s=0.5, alerts_ledger_timeout_s=0.3)
    a.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    await a.fire(("DiskFull", "f1"))
    await a.fire(("DiskFull", "f2"))
    assert not await a.router.store.recover()  # still stalled
    store.answering.set()
    assert await a.router.store.recover()
    assert not a.router.store.backlog
    assert a.router.metrics.registry.get_sample_value("dgemma_alerts_ledger_up") == 1
    b = make_stack(store=store, sinks=a.sinks)
    for fp in ("f1", "f2"):
        assert (await b.fire(("DiskFull", fp))).json()["outcomes"] == {"duplicate": 1}
    assert a.delivered() == {"db-pager": 2, "db-chat": 2}  # each alert once, on each of its sinks
    listed = await store.names("alerts/")
    assert sum(n.endswith("/chosen") for n in listed) == 2 and not any(n.endswith(".claim") for n in listed)


async def test_a_slow_store_is_given_up_at_the_delivery_deadline(make_stack: StackFactory) -> None:
    """Each call answers, but 0.25 s late: a new alert's ~6 calls would take 1.5 s; the page goes
    out by its deadline (0.3 s budget, 0.4 s for the store) all the same, and is known afterwards."""

    class Slow(MemoryStore):
        async def names(self, prefix: str) -> list[str]:
            await asyncio.sleep(0.25)
            return await super().names(prefix)

        async def create(self, name: str, body: dict[str, Any]) -> int | None:
            await asyncio.sleep(0.25)
            return await super().create(name, body)

    store = Slow()
    s = make_stack(store=store, alerts_decision_budget_s=0.3, alerts_ledger_timeout_s=0.4)
    s.engine.hold = asyncio.Event()  # the service does not answer: a fallback page
    started = time.monotonic()
    r = await asyncio.wait_for(s.fire(("DiskFull", "f1")), 10)
    took = time.monotonic() - started
    assert r.json()["outcomes"] == {"fallback": 1}
    assert took < 0.3 + 0.4 + 0.5, took
    assert len(s.pages("oncall-pager")) == 1
    assert await s.router.store.recover()  # slow, not away: the backlog is written
    assert (await s.fire(("DiskFull", "f1"))).json()["outcomes"] == {"duplicate": 1}
    assert len(s.pages("oncall-pager")) == 1


async def test_an_unreadable_pending_entry_does_not_stop_the_others(
    make_stack: StackFactory, shared: ObjectStore
) -> None:
    a, b = two(make_stack, shared, alerts_decision_budget_s=0.2, alerts_ledger_claim_s=1)
    a.engine.hold = asyncio.Event()
    await a.fire(("DiskFull", "f1"))
    await a.router.aclose()
    # Another revision's entry this one cannot read: listed first, its chosen page unreadable.
    await shared.create(
        "pending/aaa~-",
        {
            "alert": {
                "source": "alertmanager",
                "key": "aaa",
                "status": "firing",
                "title": "X",
                "summary": "",
            },
            "since": time.time(),
        },
    )
    await shared.create("alerts/aaa/-/chosen", {"page": {"not": "a page"}})
    await b.router._scan()
    (task,) = b.router._later.values()
    await asyncio.wait_for(task, 10)
    assert len(a.pages("oncall-pager")) == 2  # f1's update landed all the same


async def test_a_live_classification_is_not_taken_over(make_stack: StackFactory, shared: ObjectStore) -> None:
    a, b = two(make_stack, shared, alerts_decision_budget_s=0.2)
    a.engine.hold = asyncio.Event()
    await a.fire(("DiskFull", "f1"))
    await b.router._scan()
    assert a.router._later and not b.router._later  # a's claim is alive
    a.engine.hold.set()
    await asyncio.wait_for(next(iter(a.router._later.values())), 10)
    assert len(a.pages("oncall-pager")) == 2


# -- the webhooks ----------------------------------------------------------------------------------


async def test_each_source_is_routed(make_stack: StackFactory) -> None:
    s = make_stack()
    grafana = json.loads((DATA / "grafana_firing.json").read_text())
    cloud = json.loads((DATA / "cloud_monitoring_open.json").read_text())
    titles = [a["labels"]["alertname"] for a in grafana["alerts"]] + [cloud["incident"]["policy_name"]]
    for title in titles:
        s.engine.verdicts[title] = (0.9, 0.95, "error")
    r = await s.client.post("/v1/alerts/grafana", json=grafana)
    assert r.status_code == 200 and r.json()["outcomes"] == {"page": len(grafana["alerts"])}
    r = await s.client.post("/v1/alerts/cloud-monitoring", json=cloud)
    assert r.status_code == 200 and r.json()["outcomes"] == {"page": 1}
    keys = {p.alert.key.split(":")[0] for p in s.pages("db-pager")}
    assert keys == {"grafana", "cloud-monitoring"}


async def test_sender_credentials_are_checked(make_stack: StackFactory) -> None:
    s = make_stack(
        alerts_allow_open_senders=False,
        alerts_alertmanager_token="am-secret",
        alerts_grafana_basic="grafana:pw",
        alerts_cloud_monitoring_token="cm-secret",
    )
    s.engine.verdicts["DiskFull"] = (0.9, 0.95, "error")
    r = await s.fire(("DiskFull", "f1"))
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    r = await s.fire(("DiskFull", "f1"), authorization="Bearer wrong")
    assert r.status_code == 401
    assert s.delivered() == {}
    r = await s.fire(("DiskFull", "f1"), authorization="Bearer am-secret")
    assert r.status_code == 200
    r = await s.client.post("/v1/alerts/grafana", json={"alerts": []})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Basic")
    cloud = json.loads((DATA / "cloud_monitoring_closed.json").read_text())
    r = await s.client.post("/v1/alerts/cloud-monitoring", json=cloud)
    assert r.status_code == 401
    r = await s.client.post("/v1/alerts/cloud-monitoring?auth_token=cm-secret", json=cloud)
    assert r.status_code == 200 and r.json()["outcomes"] == {"resolved": 1}
    # A source that takes only basic auth offers the Basic challenge, which its sender can answer.
    basic_only = make_stack(
        alerts_allow_open_senders=False,
        alerts_alertmanager_token="am-secret",
        alerts_grafana_token="g",
        alerts_cloud_monitoring_basic="cm:pw",
    )
    wrong = "Basic " + base64.b64encode(b"cm:nope").decode()
    hook = "/v1/alerts/cloud-monitoring"
    r = await basic_only.client.post(hook, json=cloud, headers={"authorization": wrong})
    assert r.status_code == 401 and r.headers["www-authenticate"] == 'Basic realm="alerts", charset="UTF-8"'
    # The service is public: its metrics need a sender's credential, and it describes no API.
    assert (await s.client.get("/metrics")).status_code == 401
    r = await s.client.get(
        "/metrics", headers={"authorization": "Basic " + base64.b64encode(b"grafana:pw").decode()}
    )
    assert r.status_code == 200 and "dgemma_alerts_received_total" in r.text
    assert (await s.client.get("/openapi.json")).status_code == 404
    assert (await s.client.get("/healthz")).status_code == 200


async def test_a_source_without_credentials_is_refused_at_start(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, ROUTER_POLICY)
    with pytest.raises(Exception, match="no credential for alertmanager"):
        create_router_app(AlertRouterSettings(alerts_policy_file=policy), sinks={})


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        (b'{"alerts": [', 422, None),
        (b'{"alerts": [{"status": "firing"}]}', 400, "alerts[0].fingerprint: field required"),
        (b"[]", 400, "body: expected an object"),
    ],
)
async def test_a_malformed_delivery_is_refused_and_pages_nobody(
    make_stack: StackFactory, body: bytes, status: int, detail: str | None
) -> None:
    s = make_stack()
    r = await s.client.post(
        "/v1/alerts/alertmanager", content=body, headers={"content-type": "application/json"}
    )
    assert r.status_code == status, r.text
    if detail:
        assert detail in r.json()["detail"]
    assert s.delivered() == {}


async def test_an_oversized_delivery_is_413(make_stack: StackFactory) -> None:
    s = make_stack()
    r = await s.client.post("/v1/alerts/alertmanager", content=b" " * (5 * 1024 * 1024))
    assert r.status_code == 413


async def test_metrics_count_what_happened(make_stack: StackFactory) -> None:
    s = make_stack(alerts_decision_budget_s=0.2)
    s.engine.verdicts |= {"DiskFull": (0.9, 0.95, "error"), "Noise": (0.01, 0.95, "info")}
    s.engine.verdicts["Late"] = (0.9, 0.95, "error")
    await s.fire(("DiskFull", "f1"), ("Noise", "f2"))
    s.engine.hold = asyncio.Event()
    await s.fire(("Late", "f3"))
    text = (await s.client.get("/metrics")).text
    assert 'dgemma_alerts_received_total{source="alertmanager",status="firing"} 3.0' in text
    assert 'dgemma_alerts_classified_total{action="page"} 1.0' in text
    assert 'dgemma_alerts_classified_total{action="drop"} 1.0' in text
    assert "dgemma_alerts_fallback_total 1.0" in text
    assert 'dgemma_alerts_delivered_total{kind="page",sink="oncall-pager"} 1.0' in text
    s.engine.hold.set()
    await eventually(lambda: not s.router._later)
    text = (await s.client.get("/metrics")).text
    assert 'dgemma_alerts_classified_total{action="late-page"} 1.0' in text
    assert (await s.client.get("/healthz")).status_code == 200
    assert (await s.client.get("/readyz")).status_code == 200


async def test_the_watchdog_is_a_heartbeat_never_a_page(make_stack: StackFactory) -> None:
    """Alertmanager's always-firing Watchdog reaches the router as the dead-man's switch's signal: its
    arrival time is a metric, nothing is classified, paged or recorded as a decision."""
    s = make_stack()
    before = time.time()
    r = await s.fire(("Watchdog", "w1"), ("DiskFull", "f1"))
    assert r.status_code == 200 and r.json()["outcomes"]["heartbeat"] == 1
    assert set(s.engine.asked) == {"DiskFull"}  # the Watchdog is not asked
    assert all(p.alert.title != "Watchdog" for sink in s.sinks.values() for p in sink.pages)
    await s.fire(("Watchdog", "w1"))  # Alertmanager repeats it every repeat_interval
    text = (await s.client.get("/metrics")).text
    assert 'dgemma_alerts_heartbeats_total{source="alertmanager"} 2.0' in text
    (line,) = [x for x in text.splitlines() if x.startswith("dgemma_alerts_heartbeat_timestamp_seconds{")]
    assert before <= float(line.split()[-1]) <= time.time()
    quiet = make_stack(alerts_heartbeats=[])  # no heartbeat named: a Watchdog is an alert like any
    quiet.engine.verdicts["Watchdog"] = (0.01, 0.95, "info")
    assert (await quiet.fire(("Watchdog", "w1"))).json()["outcomes"].get("heartbeat") is None


async def test_pending_late_classifications_and_their_age_are_metrics(
    make_stack: StackFactory, shared: ObjectStore
) -> None:
    """A fallback page waiting for its classification shows in the count and the oldest's age, here
    and (through the ledger's list) on another instance; both go back to 0 once it is classified."""
    a, b = two(make_stack, shared, alerts_decision_budget_s=0.2)
    a.engine.hold = asyncio.Event()
    await a.fire(("DiskFull", "f1"))
    await asyncio.sleep(1.1)
    for router in (a, b):
        await router.router._scan()
        text = (await router.client.get("/metrics")).text
        assert "dgemma_alerts_pending_classifications 1.0" in text, router
        (age,) = [x for x in text.splitlines() if x.startswith("dgemma_alerts_pending_oldest_seconds ")]
        assert 1.0 <= float(age.split()[-1]) < 30
    a.engine.hold.set()
    await eventually(lambda: not a.router._later)
    await b.router._scan()
    for router in (a, b):
        text = (await router.client.get("/metrics")).text
        assert "dgemma_alerts_pending_classifications 0.0" in text
        assert "dgemma_alerts_pending_oldest_seconds 0.0" in text


# -- the audit record, rules, shadow mode ------------------------------------------------------------


def _audit(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_every_decision_leaves_an_audit_record_and_a_count(
    make_stack: StackFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    audit = tmp_path / "audit.jsonl"
    s = make_stack(alerts_decision_budget_s=0.3, alerts_audit_file=audit)
    s.engine.verdicts |= {
        "Pg": (0.9, 0.95, "error"),
        "Noise": (0.01, 0.95, "info"),
        "Late": (0.9, 0.1, "error"),
    }
    s.engine.verdicts["Lag"] = (0.2, 0.1, "warning")
    with caplog.at_level("INFO", logger="app.alerts.audit"):
        await s.fire(("Pg", "f1"), ("Noise", "f2"), ("Lag", "f3"))
        s.engine.hold = asyncio.Event()
        await s.fire(("Late", "f4"))
        s.engine.hold.set()
        await eventually(lambda: not s.router._later)
        await s.fire(("Pg", "f1"))  # a repeat is not a new decision
        await s.resolve(("Pg", "f1"))
        await s.resolve(("Pg", "f1"))  # nor is a repeated resolution
    records = _audit(audit)
    by = {(r["alert"], r["event"]): r for r in records}
    assert len(records) == 6, records
    pg, noise, lag = by["Pg", "decision"], by["Noise", "decision"], by["Lag", "decision"]
    assert (pg["action"], pg["route"], pg["team"], pg["classified"]) == ("page", "database", "database", True)
    assert pg["p_page"] == pytest.approx(0.9) and pg["mode"] == "act" and pg["key"] == "alertmanager:f1"
    assert (noise["action"], noise["reason"]) == ("drop", "p(page) 0.01 < 0.15")  # the route allows drops
    assert (lag["action"], lag["route"]) == ("ticket", "network")
    late = by["Late", "decision"]
    assert (late["action"], late["classified"], late["route"]) == ("page", False, "oncall")
    assert by["Late", "update"]["reason"].startswith("classified late: page, route network")
    assert by["Pg", "resolved"]["reason"] == "resolved: to db-chat, db-pager"
    assert all(r["labels"]["alertname"] == r["alert"] and r["source_severity"] == "critical" for r in records)
    # Each record is also a log line, the record under `audit` (Cloud Logging's jsonPayload.audit).
    logged = [getattr(r, "audit") for r in caplog.records if hasattr(r, "audit")]  # noqa: B009
    assert [(r["alert"], r["event"]) for r in logged] == [(r["alert"], r["event"]) for r in records]
    assert any(r.getMessage() == "drop Noise: p(page) 0.01 < 0.15" for r in caplog.records)
    text = (await s.client.get("/metrics")).text
    for action, route in (
        ("page", "database"),
        ("drop", "database"),
        ("ticket", "network"),
        ("page", "oncall"),
    ):
        assert f'dgemma_alerts_decisions_total{{action="{action}",mode="act",route="{route}"}} 1.0' in text


RULED = """
[[rules]]
name = "inhibitor"
matchers = ['alertname="InfoInhibitor"']
action = "drop"
classify = false

[[rules]]
name = "always"
matchers = ['alertname="Quiet"']
action = "page"
"""


async def test_a_rule_that_never_classifies_never_asks_and_a_rule_action_wins(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "ruled.toml", ROUTER_POLICY + RULED)
    s = make_stack(alerts_policy_file=policy, alerts_audit_file=tmp_path / "audit.jsonl")
    s.router.policy = Policy.load(policy)
    s.engine.verdicts["Quiet"] = (0.01, 0.95, "info")  # InfoInhibitor has no verdict: asking it would fail
    r = await s.fire(("InfoInhibitor", "f1"), ("Quiet", "f2"))
    assert r.json()["outcomes"] == {"drop": 1, "page": 1}
    assert [p.alert.title for p in s.pages("db-pager")] == ["Quiet"]
    assert "rule always: page" in s.pages("db-pager")[0].reason
    (inhibitor,) = [a for a in _audit(tmp_path / "audit.jsonl") if a["alert"] == "InfoInhibitor"]
    assert (inhibitor["action"], inhibitor["rules"]) == ("drop", ["inhibitor"])
    assert inhibitor["classified"] is False
    assert "InfoInhibitor" not in s.engine.asked and "Quiet" in s.engine.asked


async def test_shadow_mode_pages_as_sent_and_records_what_it_would_have_done(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    s = make_stack(alerts_mode="shadow", alerts_audit_file=audit, alerts_decision_budget_s=0.3)
    s.engine.verdicts |= {"Pg": (0.9, 0.95, "error"), "Noise": (0.01, 0.95, "info")}
    s.sinks["oncall-pager"].fail = 1  # the first page fails: the record is still written
    r = await s.fire(("Pg", "f1"), ("Noise", "f2"))
    assert r.status_code == 502
    r = await s.fire(("Pg", "f1"), ("Noise", "f2"))  # the sender's retry completes the page only
    assert r.json()["outcomes"] == {"duplicate": 2}
    assert s.delivered() == {"oncall-pager": 2}  # every alert paged as sent, on the fallback route
    assert {p.alert.title for p in s.pages("oncall-pager")} == {"Pg", "Noise"}
    assert all(p.severity == "critical" and not p.classified for p in s.pages("oncall-pager"))
    records = {r["alert"]: r for r in _audit(audit)}
    assert len(_audit(audit)) == 2
    assert records["Pg"]["would"]["action"] == "page" and records["Pg"]["would"]["route"] == "database"
    assert records["Noise"]["would"]["action"] == "drop" and records["Noise"]["action"] == "page"
    assert records["Noise"]["mode"] == "shadow" and records["Noise"]["p_page"] == pytest.approx(0.01)
    # The service down: the page is as sent all the same, and the record says it was not classified.
    s.engine.hold = asyncio.Event()
    s.engine.verdicts["Held"] = (0.9, 0.95, "error")
    await s.fire(("Held", "f3"))
    held = _audit(audit)[-1]
    assert (
        held["action"] == "page"
        and held["would"]["classified"] is False
        and "0.3 s" in held["would"]["reason"]
    )
    assert not s.router._later  # shadow mode classifies nothing later: nothing it sent depends on it
    s.engine.hold.set()
    text = (await s.client.get("/metrics")).text
    assert 'dgemma_alerts_decisions_total{action="drop",mode="shadow",route="database"} 1.0' in text
