"""The durable ledger end to end, every part a real process: Alertmanager 0.25 posts to router
processes (`dgemma alerts serve`) that share one ledger bucket on the GCS emulator
(fake-gcs-server), ask a real gateway (over the instant stand-in engine: these tests are about
deliveries, never answers), and page a PagerDuty-shaped receiver and a webhook receiver on loopback.
Routers are killed with SIGKILL mid-work and restarted, as Cloud Run instances die and deploys
overlap."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.core.polling import wait_until
from deploy.runtime.weights import client_from_env
from devtools.harness.alertmanager import alertmanager
from devtools.harness.alertrig import POLICY, Proxy, Receiver, RouterProcess, router, write_policy
from devtools.harness.gcs import fake_gcs
from devtools.harness.local_stack import gateway, instant_engine
from devtools.harness.loopback import Reply, Seen, serve

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("alertmanager_installed")]

# The rig's policy (every alert pages, app/alerts' rig), its pages to PagerDuty only; the fallback
# route's to PagerDuty and the webhook: a resolution sent to the fallback route's sinks (what a
# router that forgot the page does) reaches the webhook, which never had the page.
DURABLE_POLICY = POLICY.replace(
    '[routes.teams]\npage = ["pagerduty", "audit"]', '[routes.teams]\npage = ["pagerduty"]'
)
# The next revision's policy: its pages also go to the webhook, and it asks sooner.
NEXT_POLICY = POLICY


@dataclass
class Holding(Receiver):
    """A receiver whose first request hangs (the sink call in flight) until `release`, then fails."""

    holding: threading.Event = field(default_factory=threading.Event)  # a request hangs now
    release: threading.Event = field(default_factory=threading.Event)
    hold: bool = False

    def answer(self, seen: Seen) -> Reply:
        if self.hold:
            self.hold = False
            self.holding.set()
            self.release.wait(60)
            return 503, {"content-type": "application/json"}, b'{"status": "error"}'
        return super().answer(seen)


@dataclass
class Rig:
    root: Path
    pd: Holding
    audit: Holding
    proxy: Proxy
    gateway_url: str
    env: dict[str, str]
    pd_url: str
    audit_url: str
    routers: int = 0

    def policy(self, text: str = DURABLE_POLICY) -> Path:
        return write_policy(
            self.root / f"policy-{'next' if text is NEXT_POLICY else 'old'}",
            self.pd_url,
            self.audit_url,
            text,
        )

    def router(self, policy: Path | None = None, *, port: int | None = None, **env: str) -> Any:
        self.routers += 1
        log = self.root / f"router-{self.routers}.log"
        return router(log, policy or self.policy(), self.gateway_url, port=port, **{**self.env, **env})

    def triggers(self, key: str) -> list[dict[str, Any]]:
        return [e for e in self.pd.about(key) if e["event_action"] == "trigger"]


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The GCS emulator (with the ledger bucket Terraform makes) and a gateway."""
    root = tmp_path_factory.mktemp("durable")
    with (
        fake_gcs(root / "gcs") as gcs_url,
        instant_engine(root / "engine.log") as engine,
        gateway(engine.url, root / "gateway.log", env={"DGEMMA_ALLOW_ANY_KEY": "true"}) as gw,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("STORAGE_EMULATOR_HOST", gcs_url)
        client_from_env("test").create_bucket("ledger")
        yield gcs_url, gw.url


@pytest.fixture
def rig(backends: tuple[str, str], tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Rig]:
    gcs_url, gateway_url = backends
    pd, audit, proxy = Holding(), Holding(ok=200), Proxy(gateway_url)
    with serve(pd.answer) as pd_server, serve(audit.answer) as audit_server, serve(proxy.answer) as px:
        env = {
            "STORAGE_EMULATOR_HOST": gcs_url,
            "DGEMMA_ALERTS_LEDGER_URL": f"gs://ledger/{request.node.name[:40]}",
            "DGEMMA_ALERTS_LEDGER_CLAIM_S": "3",  # a killed router's claims expire 3 s later
            "DGEMMA_ALERTS_LEDGER_SCAN_S": "1",
            "DGEMMA_ALERTS_ALLOW_OPEN_SENDERS": "true",
            "DGEMMA_ALERTS_DECISION_BUDGET_S": "3",
            "DGEMMA_ALERTS_GATEWAY_API_KEY": "router-key",
        }
        yield Rig(tmp_path, pd, audit, proxy, px.url, env, pd_server.url, audit_server.url)


def _key(am: Any, name: str) -> str:
    (alert,) = [a for a in am.alerts() if a["labels"]["alertname"] == name]
    return f"alertmanager:{alert['fingerprint']}"


def _webhook(r: RouterProcess) -> str:
    return f"{r.url}/v1/alerts/alertmanager"


def _wait(what: str, check: Any, timeout_s: float, logs: Path) -> None:
    if not wait_until(check, timeout_s, interval_s=0.1):
        tails = "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2500:]}" for p in sorted(logs.glob("*.log"))
        )
        pytest.fail(f"{what} within {timeout_s} s\n{tails}")


def test_two_revisions_take_the_same_delivery_at_once_and_page_once(rig: Rig, tmp_path: Path) -> None:
    """An overlapping rollout: the old and the new revision (each its own policy and budget) both
    get Alertmanager's notifications; one decides, the other delivers that decision, and the
    resolution reaches exactly the sinks that got the page."""
    with (
        rig.router(rig.policy(DURABLE_POLICY)) as old,
        rig.router(rig.policy(NEXT_POLICY), DGEMMA_ALERTS_DECISION_BUDGET_S="2") as new,
        alertmanager(tmp_path / "am", [_webhook(old), _webhook(new)]) as am,
    ):
        am.fire("DiskFull", {"instance": "db-1"}, {"summary": "Disk 97% on db-1"})
        key = _key(am, "DiskFull")
        _wait("both webhooks notified", lambda: am.log().count('msg="Notify success"') >= 2, 30, tmp_path)
        time.sleep(1.0)
        triggers, audit = rig.triggers(key), rig.audit.about(key)
        assert len(triggers) == 1, triggers
        got_page = {"pagerduty"} | ({"audit"} if audit else set())
        assert len(audit) <= 1
        am.resolve("DiskFull", {"instance": "db-1"})
        _wait(
            "the resolution",
            lambda: any(e["event_action"] == "resolve" for e in rig.pd.about(key)),
            30,
            tmp_path,
        )
        _wait(
            "both webhooks notified of it", lambda: am.log().count('msg="Notify success"') >= 4, 30, tmp_path
        )
        time.sleep(1.0)
    resolves = [e for e in rig.pd.about(key) if e["event_action"] == "resolve"]
    assert len(resolves) == 1
    audit_resolves = [d for d in rig.audit.about(key) if d.get("event") == "resolve"]
    assert len(audit_resolves) == (1 if "audit" in got_page else 0)


def test_a_router_killed_between_its_sink_calls_completes_the_page_once_after_its_restart(
    rig: Rig, tmp_path: Path
) -> None:
    """The router decides, pages PagerDuty, and dies while its call to the second sink (the webhook)
    hangs. Its restart (same address: Alertmanager's retry) finds the decision, PagerDuty's fact and
    the webhook's claim; it waits the claim out and sends only the webhook's page."""
    rig.audit.hold = True
    # pages go to PagerDuty, then the webhook
    with rig.router(rig.policy(NEXT_POLICY)) as a, alertmanager(tmp_path / "am", _webhook(a)) as am:
        am.fire("DiskFull", {"instance": "db-1"})
        assert rig.audit.holding.wait(30), "the page never reached the webhook"
        key = _key(am, "DiskFull")
        assert len(rig.triggers(key)) == 1
        a.kill()
        rig.audit.release.set()  # the dead router's call fails: the webhook accepted nothing
        with rig.router(rig.policy(NEXT_POLICY), port=a.port):
            _wait(
                "the webhook's page after the restart",
                lambda: len(rig.audit.about(key)) >= 1,
                60,
                tmp_path,
            )
            assert am.wait_log('msg="Notify success"', 30), am.log()
            time.sleep(1.0)
    assert len(rig.triggers(key)) == 1  # PagerDuty's page is not sent again
    assert len(rig.audit.about(key)) == 1


def test_a_resolution_after_a_restart_reaches_exactly_the_sinks_of_the_page(rig: Rig, tmp_path: Path) -> None:
    with rig.router() as a, alertmanager(tmp_path / "am", _webhook(a)) as am:
        am.fire("DiskFull", {"instance": "db-1"})
        key = _key(am, "DiskFull")
        _wait("the page", lambda: len(rig.triggers(key)) == 1, 30, tmp_path)
        assert am.wait_log('msg="Notify success"', 15), am.log()
        a.kill()
        with rig.router(port=a.port):
            am.resolve("DiskFull", {"instance": "db-1"})
            _wait("the resolution", lambda: len(rig.pd.about(key)) == 2, 60, tmp_path)
            time.sleep(1.0)
    assert rig.pd.about(key)[1]["event_action"] == "resolve"
    assert rig.audit.about(key) == []  # the fallback route's webhook never had the page, nor its end


def test_a_fallback_page_is_classified_by_the_next_router_after_its_instance_died(
    rig: Rig, tmp_path: Path
) -> None:
    """The service is down: the router pages unclassified at once and lists the alert as pending;
    it is killed. A router started later (no new alert needed) takes the classification over once
    the dead one's claim expires, and updates the same incident."""
    rig.proxy.down = True
    with rig.router() as a:
        with alertmanager(tmp_path / "am", _webhook(a)) as am:
            am.fire("ReplicationLag", {"instance": "db-2"})
            key = _key(am, "ReplicationLag")
            _wait("the unclassified page", lambda: len(rig.triggers(key)) == 1, 30, tmp_path)
            assert am.wait_log('msg="Notify success"', 15), am.log()
        a.kill()
        rig.proxy.down = False
        with rig.router():
            _wait("the late classification", lambda: len(rig.triggers(key)) == 2, 60, tmp_path)
            time.sleep(1.5)
    page, update = rig.triggers(key)
    assert page["payload"]["custom_details"]["classified"] is False
    assert update["payload"]["custom_details"]["classified"] is True
    assert update["dedup_key"] == page["dedup_key"] == key
    assert len(rig.triggers(key)) == 2  # taken over once
