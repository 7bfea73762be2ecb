"""The ledger's store and its facts, on both stores: this process's memory, and Cloud Storage as the
real fake-gcs-server emulator checks it (create-only and compare-and-swap writes are multipart
uploads with generation preconditions: the one write it checks them on)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import Iterator

import pytest
from google.cloud import storage

from app.alerts.ledger import CHOSEN, Ledger, episode_of
from app.alerts.records import Alert, Page
from app.alerts.store import GcsStore, MemoryStore, ObjectStore

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


@pytest.fixture(params=["memory", "gcs"])
def store(request: pytest.FixtureRequest) -> Iterator[ObjectStore]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        client: storage.Client = request.getfixturevalue("gcs")
        request.getfixturevalue("bucket")
        yield GcsStore(f"gs://ledger/t-{uuid.uuid4().hex[:8]}", client)


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
