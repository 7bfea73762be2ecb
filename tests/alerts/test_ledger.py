"""The ledger's store and its facts, on every store: this process's memory, Cloud Storage as the
real fake-gcs-server emulator checks it (create-only and compare-and-swap writes are multipart
uploads with generation preconditions: the one write it checks them on), and the fail-open store
(memory behind a shared store) with its shared store up, away (failing: served from memory) and
back (answering again after an outage)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.cloud import storage

from app.alerts.ledger import CHOSEN, Ledger, episode_of, keep_in_memory
from app.alerts.records import Alert, Page
from app.alerts.store import (
    Deadline,
    FailoverStore,
    GcsStore,
    LedgerUnavailable,
    MemoryStore,
    ObjectStore,
    Stored,
)

pytestmark = pytest.mark.integration

ALERT = Alert(
    source="alertmanager",
    key="alertmanager:4f2c/1",  # a slash, to be quoted
    status="firing",
    title="DiskFull",
    summary="Disk 97% on db-1",
    labels={"instance": "db-1", "severity": "critical"},
    annotations={"description": "97 % used"},
    started_at=dt.datetime(2026, 12, 1, 9, 30, 0, 123456, tzinfo=dt.UTC),
    url="http://prometheus/graph",
)
PAGE = Page(
    ALERT,
    "page",
    "database",
    "critical",
    True,
    answers={"page": {"noul": 0.9}},
    reason="p 0.9",
    rules=("floor",),
)


@pytest.fixture(scope="module")
def bucket(gcs: storage.Client) -> str:
    gcs.create_bucket("ledger")
    return "ledger"


class Switch(MemoryStore):
    """A shared store that fails every call, as GcsStore does when Cloud Storage does not answer,
    while `down`; `calls` counts the calls that reached it."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.calls = 0

    def _reach(self) -> None:
        self.calls += 1
        if self.down:
            raise LedgerUnavailable("ledger: the shared store is down")

    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        self._reach()
        return await super().create(name, body)

    async def read(self, name: str) -> Stored | None:
        self._reach()
        return await super().read(name)

    async def replace(self, name: str, body: dict[str, Any], generation: int) -> int | None:
        self._reach()
        return await super().replace(name, body, generation)

    async def names(self, prefix: str) -> list[str]:
        self._reach()
        return await super().names(prefix)

    async def delete(self, name: str) -> None:
        self._reach()
        await super().delete(name)


def failover(shared: ObjectStore | None) -> FailoverStore:
    """The router's fail-open store, keeping in memory what the ledger tells it to."""
    return FailoverStore(shared, timeout_s=1.0, keep=keep_in_memory)


@pytest.fixture(params=["memory", "gcs", "failover-up", "failover-away", "failover-back"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[ObjectStore]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "gcs":
        client: storage.Client = request.getfixturevalue("gcs")
        request.getfixturevalue("bucket")
        yield GcsStore(f"gs://ledger/t-{uuid.uuid4().hex[:8]}", client)
    else:
        shared = Switch()
        store = failover(shared)
        if request.param in ("failover-away", "failover-back"):
            shared.down = True
            assert await store.names("alerts/") == [] and not store.up  # away: memory answers
        if request.param == "failover-back":
            shared.down = False
            assert await store.recover() and store.up  # back: the shared store answers again
        yield store
        if request.param == "failover-away":
            assert not store.up and shared.calls == 1  # the contract held on memory alone


async def test_a_fact_is_created_once_and_read_back(store: ObjectStore) -> None:
    first = await store.create("alerts/k/e/chosen", {"n": 1})
    assert first is not None
    assert await store.create("alerts/k/e/chosen", {"n": 2}) is None
    found = await store.read("alerts/k/e/chosen")
    assert found is not None and found.body["n"] == 1 and found.generation == first
    assert await store.read("alerts/k/e/missing") is None


async def test_compare_and_swap_moves_only_from_the_generation_read(store: ObjectStore) -> None:
    g1 = await store.create("alerts/k/e/x.claim", {"owner": "a"})
    assert g1 is not None
    g2 = await store.replace("alerts/k/e/x.claim", {"owner": "b"}, g1)
    assert g2 is not None and g2 != g1
    assert await store.replace("alerts/k/e/x.claim", {"owner": "c"}, g1) is None  # stale
    found = await store.read("alerts/k/e/x.claim")
    assert found is not None and found.body["owner"] == "b"
    assert await store.replace("alerts/k/e/none.claim", {"owner": "c"}, 1) is None


async def test_names_list_a_prefix_and_delete_is_cleanup(store: ObjectStore) -> None:
    for name in ("alerts/a/1/chosen", "alerts/a/1/page.classified:pd", "alerts/b/1/chosen", "pending/a~1"):
        await store.create(name, {})
    assert await store.names("alerts/a/1/") == ["alerts/a/1/chosen", "alerts/a/1/page.classified:pd"]
    assert await store.names("pending/") == ["pending/a~1"]
    await store.delete("pending/a~1")
    await store.delete("pending/a~1")  # gone already: nothing happens
    assert await store.names("pending/") == []


async def test_of_sixteen_concurrent_creators_exactly_one_wins(store: ObjectStore) -> None:
    results = await asyncio.gather(*(store.create("alerts/k/e/chosen", {"i": i}) for i in range(16)))
    assert sum(r is not None for r in results) == 1


async def test_a_create_retried_after_a_lost_reply_knows_its_own_object(
    gcs: storage.Client, bucket: str
) -> None:
    """The client retries a conditional upload whose reply was lost; the retry's 412 is its own
    write, which the nonce in the body tells apart from another writer's."""
    store = GcsStore(f"gs://{bucket}/nonce", gcs)
    calls = 0
    real = storage.Blob.upload_from_string

    def lost_reply(blob: storage.Blob, *args: object, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        real(blob, *args, **kwargs)
        if calls == 1:
            real(blob, *args, **kwargs)  # the retry: 412 on its own object

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(storage.Blob, "upload_from_string", lost_reply)
        assert await store.create("alerts/k/e/chosen", {"n": 1}) is not None  # its own write
    assert calls == 1
    assert await store.create("alerts/k/e/chosen", {"n": 2}) is None  # another writer's: not ours


async def test_the_chosen_page_round_trips_and_the_first_decision_wins(store: ObjectStore) -> None:
    a, b = Ledger(store, owner="a"), Ledger(store, owner="b")
    ep_a, ep_b = await a.episode(ALERT), await b.episode(ALERT)
    other = Page(ALERT, "ticket", "network", "warning", True, reason="other")
    (won_a, ok_a), (won_b, ok_b) = await asyncio.gather(ep_a.choose(PAGE), ep_b.choose(other))
    assert ok_a != ok_b and won_a == won_b  # one decision, the same page for both
    again = await a.episode(ALERT)
    assert again.done(CHOSEN) and await again.page() == won_a


async def test_a_live_claim_keeps_others_off_and_an_expired_one_is_taken_over_once(
    store: ObjectStore,
) -> None:
    a = Ledger(store, claim_s=0.5, owner="a")
    ep = await a.episode(ALERT)
    claim = await ep.claim("page.classified:pd")
    assert claim is not None
    others = [await Ledger(store, claim_s=0.5, owner=f"o{i}").episode(ALERT) for i in range(4)]
    assert [await o.claim("page.classified:pd") for o in others] == [None] * 4
    claim = await ep.claim("page.classified:pd")  # its own claim, again (extended)
    assert claim is not None
    await asyncio.sleep(0.6)
    taken = await asyncio.gather(*(o.claim("page.classified:pd") for o in others))
    assert sum(t is not None for t in taken) == 1
    winner = next(t for t in taken if t is not None)
    assert await ep.renew(claim) is None  # taken over: the old owner's renewal fails
    owner = others[taken.index(winner)]
    assert await owner.renew(winner) is not None


async def test_the_sinks_of_an_episode_are_the_facts_of_its_pages(store: ObjectStore) -> None:
    ep = await Ledger(store).episode(ALERT)
    for fact in ("page.fallback:pd", "page.classified:chat.claim", "ticket.classified:jira", "resolve:pd"):
        await ep.mark(fact)
    await ep.load()
    assert ep.sinks() == {"pd", "jira"}


async def test_pending_work_is_listed_for_any_process_until_dropped(store: ObjectStore) -> None:
    a, b = Ledger(store, owner="a"), Ledger(store, owner="b")
    await a.add_pending(ALERT)
    (item,) = await b.pending()
    assert item.alert == ALERT and item.since <= time.time()
    await b.drop_pending(ALERT)
    assert await a.pending() == []


def test_an_episode_is_the_start_time_and_a_new_start_is_a_new_episode() -> None:
    assert episode_of(ALERT) == "20261201T093000.123456Z"
    later = Alert(**{**ALERT.__dict__, "started_at": ALERT.started_at + dt.timedelta(hours=1)})  # type: ignore[operator]
    assert episode_of(later) != episode_of(ALERT)
    assert episode_of(Alert(**{**ALERT.__dict__, "started_at": None})) == "-"


# -- the fail-open store beyond the contract -------------------------------------------------------


async def test_away_the_facts_kept_are_written_when_the_store_is_back_and_claims_are_not() -> None:
    shared = Switch()
    store = failover(shared)
    shared.down = True
    await store.create("alerts/k/e/chosen", {"n": 1})  # fails: away, created in memory
    await store.create("alerts/k/e/page.classified:pd.claim", {"owner": "a"})
    await store.create("pending/k~e", {"alert": {}, "since": 1.0})
    assert list(store.backlog) == ["alerts/k/e/chosen", "pending/k~e"]
    assert not await store.recover()  # still down
    shared.down = False
    assert await store.recover() and store.up and not store.backlog
    assert await shared.names("") == ["alerts/k/e/chosen", "pending/k~e"]  # oldest first; no claim


async def test_a_claim_taken_in_the_shared_store_stays_its_owners_while_the_store_is_away() -> None:
    """Renewed while the store is away, a claim the shared store gave this process is still its own
    (in memory); a replace from a generation it never gave fails, as the shared store's would."""
    shared = Switch()
    store = failover(shared)
    ep = await Ledger(store, owner="a").episode(ALERT)
    claim = await ep.claim("classify")
    assert claim is not None
    shared.down = True
    renewed = await ep.renew(claim)  # fails over: away, answered from memory
    assert renewed is not None and not store.up
    assert await ep.renew(renewed) is not None
    assert await store.replace("alerts/x/-/classify.claim", {"owner": "b"}, claim.generation) is None


async def test_up_what_the_shared_store_answers_is_kept_for_when_it_is_away() -> None:
    """Facts are kept as the shared store has them (read, written, or named by a listing); a pending
    entry only with its body; claims never (another's must not keep a send off while away)."""
    shared = Switch()
    await shared.create("alerts/k/e/chosen", {"page": "p"})
    await shared.create("alerts/k/e/page.classified:pd", {})
    await shared.create("alerts/k/e/page.classified:pd.claim", {"owner": "other"})
    await shared.create("pending/k~e", {"alert": {}, "since": 1.0})
    store = failover(shared)
    await store.names("alerts/k/e/")
    await store.names("pending/")
    shared.down = True
    assert await store.names("alerts/k/e/") == ["alerts/k/e/chosen", "alerts/k/e/page.classified:pd"]
    assert await store.names("pending/") == []  # listed, not read: no empty stand-in to resume
    assert await store.create("alerts/k/e/page.classified:pd.claim", {"owner": "me"}) is not None


async def test_a_call_by_a_deadline_ends_at_it_and_says_it_was_served_from_memory() -> None:
    class Hanging(MemoryStore):
        async def names(self, prefix: str) -> list[str]:
            await asyncio.sleep(10)
            return []

    store = FailoverStore(Hanging(), timeout_s=5.0, keep=keep_in_memory)
    calls = store.within(Deadline(time.monotonic() + 0.2))
    started = time.monotonic()
    assert await calls.names("alerts/") == []
    assert time.monotonic() - started < 0.2 + 0.5 and not store.up
    assert calls.served  # what this caller's calls returned; nobody else's
    assert not store.within(Deadline()).served
    alone = FailoverStore(None).within(Deadline(time.monotonic() + 0.2))
    await alone.create("alerts/k/e/chosen", {})
    assert not alone.served  # memory alone is the store, not a fallback
