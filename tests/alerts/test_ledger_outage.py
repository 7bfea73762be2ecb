"""The ledger's store failing for real: the GCS emulator (fake-gcs-server) stopped, behind a loopback
proxy that hangs or slows every request, and coming back in the middle of a burst; under it the
store's own client (GcsStore) and router processes (`dgemma alerts serve`, two sharing one ledger)
with a real Alertmanager as a sender. A page goes out within the decision budget plus the store's
timeout (5 + 1 s by default) whatever the store does, none is lost, and each alert is paged at most
once per process."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.alerts.store import Deadline, GcsStore, LedgerUnavailable
from app.core.polling import wait_until
from app.core.storage import storage_client
from devtools.bench.ledger_outage import OutageRig, metric, outage_rig
from devtools.harness.alertmanager import alertmanager
from devtools.harness.faultproxy import FaultProxy, fault_proxy
from devtools.harness.gcs import fake_gcs_server

pytestmark = pytest.mark.integration

BUDGET_S, LEDGER_S = 5.0, 1.0  # the router's defaults
SLACK_S = 0.5  # a loaded 2-core machine's scheduling


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultProxy]:
    """The emulator with a `ledger` bucket, reached through the fault proxy."""
    with fake_gcs_server(tmp_path_factory.mktemp("gcs")) as gcs, fault_proxy(gcs.port) as proxy:
        httpx.post(f"{gcs.url}/storage/v1/b?project=local", json={"name": "ledger"}, timeout=10)
        yield proxy


@pytest.mark.parametrize("mode", ["refuse", "hang", "slow"])
async def test_the_stores_calls_end_at_their_timeout_threads_included(
    proxied: FaultProxy, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """google-cloud-storage's default retry would go on for 120 s (what the router waited): each
    call's retry and HTTP timeout are the time left, so the call and its worker thread both end."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxied.url)
    store = GcsStore("gs://ledger/t", storage_client(), timeout_s=0.5)
    assert await store.names("alerts/") == []  # through the proxy, passing
    proxied.set(mode, delay_s=3.0)  # type: ignore[arg-type]
    try:
        started = time.monotonic()
        with pytest.raises(LedgerUnavailable):
            await store.create("alerts/x/-/chosen", {"page": {}})
        assert time.monotonic() - started < 0.5 + SLACK_S
        # The worker thread ended too (a shutdown waits for it).
        await asyncio.wait_for(asyncio.to_thread(store._pool.shutdown, True), 3)
    finally:
        proxied.set("pass")


async def test_a_call_in_a_delivery_ends_at_its_deadline(
    proxied: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxied.url)
    store = GcsStore("gs://ledger/t", storage_client(), timeout_s=5.0)
    proxied.set("hang")
    try:
        started = time.monotonic()
        with pytest.raises(LedgerUnavailable):
            await store.within(Deadline(time.monotonic() + 0.3)).names("alerts/")
        assert time.monotonic() - started < 0.3 + SLACK_S
    finally:
        proxied.set("pass")


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutageRig]:
    """Two router processes sharing a ledger on the emulator through the proxy, the decision
    service down (every page a fallback page)."""
    with outage_rig(tmp_path_factory.mktemp("outage")) as r:
        yield r


@pytest.mark.parametrize("state", ["stopped", "hanging", "slow", "returns"])
def test_with_the_store_away_every_alert_pages_in_time_once_per_router(rig: OutageRig, state: str) -> None:
    burst = rig.burst(state, 8)  # type: ignore[arg-type]
    print(burst.line())
    assert burst.lost == 0
    assert all(t.pages <= len(rig.routers) for t in burst.trials), burst.line()  # once per process
    assert burst.statuses == {200: 8 * len(rig.routers)}, burst.line()
    assert max(burst.answer_s) < BUDGET_S + LEDGER_S + SLACK_S, burst.line()
    assert max(burst.page_s) < BUDGET_S + LEDGER_S + SLACK_S, burst.line()
    # The store answers again (the burst healed it): what each router decided from memory is in it,
    # so the same alerts sent again page nobody.
    pages = {t.key: t.pages for t in burst.trials}
    again = rig.resend(burst)
    assert again.statuses == {200: 8 * len(rig.routers)}
    assert {t.key: rig.pages(t.key) for t in burst.trials} == pages
    for url in rig.routers:
        assert (
            metric(url, "dgemma_alerts_ledger_backlog") == 0 and metric(url, "dgemma_alerts_ledger_up") == 1
        )


def test_healthy_the_pair_pages_each_alert_once(rig: OutageRig) -> None:
    burst = rig.burst("healthy", 6)
    assert burst.lost == 0 and burst.duplicates == 0, burst.line()


def test_alertmanager_gets_its_answers_while_the_store_hangs(rig: OutageRig, tmp_path: Path) -> None:
    """Alertmanager 0.25 notifying both routers while the store hangs: every notification succeeds
    at its first attempt (no retry, no error logged), and each alert pages within the deadline of
    Alertmanager's notification."""
    hooks = [f"{url}/v1/alerts/alertmanager" for url in rig.routers]
    with alertmanager(tmp_path / "am", hooks, group_by=("alertname", "instance")) as am:
        rig.fault("hanging")
        try:
            names = [f"StoreHang{i}" for i in range(3)]
            for name in names:
                am.fire(name, {"instance": "db-1"}, {"summary": f"{name} on db-1"})
            assert wait_until(lambda: am.log().count('msg="Notify success"') >= 2 * len(names), 30), am.log()
            keys = [f"alertmanager:{a['fingerprint']}" for a in am.alerts()]
            assert len(keys) == len(names) and all(rig.pages(k) for k in keys)
        finally:
            rig.heal()
        successes = [line for line in am.log().splitlines() if 'msg="Notify success"' in line]
        assert all("attempts=1" in line for line in successes), successes  # answered at once
        assert "Notify for alerts failed" not in am.log()
        assert am.metric("alertmanager_notifications_failed_total", integration="webhook") == 0
        assert all(rig.pages(k) <= len(rig.routers) for k in keys)
