"""The alert router end to end, every part real: Alertmanager 0.25 posts its webhook to the router
process (`dgemma alerts serve`), which asks the session's gateway and vLLM engine (through a loopback
proxy that can play a cold or failed service and records what reaches it), mints its ID token from
a fake metadata server, and pages a PagerDuty-shaped Events API receiver and a webhook receiver on
loopback.

The tiny model's answers mean nothing, so the policy here pages whatever the model says (every
threshold 0): these tests pin down deliveries (how many, where, classified or not, which dedup key,
the updates and resolutions), never the classification itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.polling import wait_until
from devtools.harness.alertmanager import alertmanager
from devtools.harness.alertrig import ROUTING_KEY, Proxy, Receiver, router_process, write_policy
from devtools.harness.local_stack import ROOT, LocalStack
from devtools.harness.loopback import serve
from devtools.harness.metadata import claims_of, fake_metadata

pytestmark = [pytest.mark.integration, pytest.mark.engine, pytest.mark.usefixtures("alertmanager_installed")]
DATA = Path(__file__).resolve().parents[1] / "data" / "alerts"
AM_TOKEN, GRAFANA_TOKEN, CM_TOKEN = "am-s3cret", "grafana-s3cret", "cm-s3cret"


@dataclass
class Rig:
    url: str  # the router
    pd: Receiver
    audit: Receiver
    proxy: Proxy
    proxy_url: str
    policy: Path
    log: Path

    def pages(self, key: str, count: int, timeout_s: float = 60) -> list[dict[str, Any]]:
        """The PagerDuty events about `key` once there are `count` (fails the test otherwise)."""
        ok = wait_until(lambda: len(self.pd.about(key)) >= count, timeout_s, interval_s=0.1)
        assert ok, f"{len(self.pd.about(key))} of {count} events for {key}; router log:\n{self.tail()}"
        return self.pd.about(key)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def rig(stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """One router process for the module, with its receivers, proxy and metadata server."""
    root = tmp_path_factory.mktemp("router")
    pd, audit, proxy = Receiver(), Receiver(ok=200), Proxy(stack.url)
    with (
        serve(pd.answer) as pd_server,
        serve(audit.answer) as audit_server,
        serve(proxy.answer) as proxy_server,
        fake_metadata() as md,
    ):
        policy = write_policy(root, pd_server.url, audit_server.url)
        log = root / "router.log"
        settings = {
            "GCE_METADATA_HOST": md.host,
            "GCE_METADATA_IP": md.host,
            "DGEMMA_ALERTS_GATEWAY_API_KEY": "router-key",
            "DGEMMA_ALERTS_ID_TOKEN": "true",
            "DGEMMA_ALERTS_DECISION_BUDGET_S": "8",  # the tiny model on 2 shared CPU cores
            "DGEMMA_ALERTS_ALERTMANAGER_TOKEN": AM_TOKEN,
            "DGEMMA_ALERTS_GRAFANA_TOKEN": GRAFANA_TOKEN,
            "DGEMMA_ALERTS_CLOUD_MONITORING_TOKEN": CM_TOKEN,
        }
        try:
            with router_process(log, policy, proxy_server.url, **settings) as url:
                yield Rig(url, pd, audit, proxy, proxy_server.url, policy, log)
        except RuntimeError as e:
            pytest.fail(str(e))


def _key(am_alerts: list[dict[str, Any]], name: str) -> str:
    (alert,) = [a for a in am_alerts if a["labels"]["alertname"] == name]
    return f"alertmanager:{alert['fingerprint']}"


def test_alertmanager_page_classified_then_resolved(rig: Rig, tmp_path: Path) -> None:
    with alertmanager(tmp_path, f"{rig.url}/v1/alerts/alertmanager", auth=("bearer", AM_TOKEN)) as am:
        am.fire("DiskFull", {"instance": "db-1", "severity": "critical"}, {"summary": "Disk 97% on db-1"})
        key = _key(am.alerts(), "DiskFull")
        (trigger,) = rig.pages(key, 1)
        assert am.wait_log('msg="Notify success"', 10), am.log()
        am.resolve("DiskFull", {"instance": "db-1", "severity": "critical"})
        events = rig.pages(key, 2)
    assert trigger["event_action"] == "trigger" and trigger["routing_key"] == ROUTING_KEY
    details = trigger["payload"]["custom_details"]
    assert details["classified"] is True and details["route"] == "teams"
    assert set(details["answers"]) == {"page", "team", "severity"}
    assert trigger["payload"]["source"] == "db-1" and trigger["payload"]["class"] == "DiskFull"
    assert events[1] == {"routing_key": ROUTING_KEY, "event_action": "resolve", "dedup_key": key}
    audit = [d["event"] for d in rig.audit.about(key)]
    assert audit == ["trigger", "resolve"]  # both sinks of the route, once each
    # The decision came through the proxy with the router's key and an ID token for the gateway.
    decided = [h for h in rig.proxy.headers if h.get("x-serverless-authorization")]
    assert decided and all(h["authorization"] == "Bearer router-key" for h in decided)
    token = decided[-1]["x-serverless-authorization"].removeprefix("Bearer ")
    assert claims_of(token)["aud"] == rig.proxy_url


def test_a_down_service_pages_unclassified_at_once_and_updates_the_same_incident(
    rig: Rig, tmp_path: Path
) -> None:
    rig.proxy.down = True
    try:
        with alertmanager(tmp_path, f"{rig.url}/v1/alerts/alertmanager", auth=("bearer", AM_TOKEN)) as am:
            fired = time.monotonic()
            am.fire("ReplicationLag", {"instance": "db-2"})
            key = _key(am.alerts(), "ReplicationLag")
            (first,) = rig.pages(key, 1, timeout_s=15)
            paged_in = time.monotonic() - fired
            assert am.wait_log('msg="Notify success"', 10), am.log()
            time.sleep(1.0)
            assert len(rig.pd.about(key)) == 1  # still down: nothing more
            rig.proxy.down = False
            events = rig.pages(key, 2, timeout_s=60)
    finally:
        rig.proxy.down = False
    assert first["payload"]["custom_details"]["classified"] is False
    assert "503" in first["payload"]["custom_details"]["reason"]
    assert paged_in < 8, f"the unclassified page took {paged_in:.1f} s (group_wait 1 s, no decision wait)"
    update = events[1]
    assert update["event_action"] == "trigger" and update["dedup_key"] == first["dedup_key"]
    assert update["payload"]["custom_details"]["classified"] is True
    assert update["payload"]["custom_details"]["reason"].startswith("classified late:")
    assert len(rig.pd.about(key)) == 2
    # The audit webhook is a sink of its own: its copy of the update may land after PagerDuty's.
    wait_until(lambda: len(rig.audit.about(key)) >= 2, 15, interval_s=0.1)
    assert [d["page"]["classified"] for d in rig.audit.about(key)] == [False, True]
    print(f"unclassified page {paged_in:.1f} s after firing, with the service down")


def test_a_sink_that_fails_gets_the_page_on_alertmanagers_retry_once(rig: Rig, tmp_path: Path) -> None:
    rig.pd.statuses = [500, 500]  # both of the sink's attempts: the delivery fails, the router answers 502
    with alertmanager(tmp_path, f"{rig.url}/v1/alerts/alertmanager", auth=("bearer", AM_TOKEN)) as am:
        am.fire("CertExpiry", {"instance": "lb-1"})
        key = _key(am.alerts(), "CertExpiry")
        (page,) = rig.pages(key, 1, timeout_s=30)
        assert am.wait_log('msg="Notify success" attempts=2', 15), am.log()
        time.sleep(1.0)
        log = am.log()
    assert "unexpected status code 502" in log
    assert len(rig.pd.about(key)) == 1 and page["event_action"] == "trigger"
    assert len(rig.audit.about(key)) == 1  # the sink that worked the first time is not paged again


def test_grafana_and_cloud_monitoring_payloads(rig: Rig) -> None:
    grafana = json.loads((DATA / "grafana_firing.json").read_text())
    r = httpx.post(
        f"{rig.url}/v1/alerts/grafana",
        json=grafana,
        headers={"authorization": f"Bearer {GRAFANA_TOKEN}"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert (
        sum(r.json()["outcomes"].values()) == len(grafana["alerts"])
        and "fallback" not in r.json()["outcomes"]
    )
    opened = json.loads((DATA / "cloud_monitoring_open.json").read_text())
    closed = json.loads((DATA / "cloud_monitoring_closed.json").read_text())
    closed["incident"]["incident_id"] = opened["incident"]["incident_id"]
    hook = f"{rig.url}/v1/alerts/cloud-monitoring"
    assert httpx.post(hook, json=opened, timeout=60).status_code == 401
    for body in (opened, closed):
        r = httpx.post(hook, params={"auth_token": CM_TOKEN}, json=body, timeout=60)
        assert r.status_code == 200, r.text
    key = f"cloud-monitoring:{opened['incident']['incident_id']}"
    assert [e["event_action"] for e in rig.pages(key, 2)] == ["trigger", "resolve"]


RULES = """
[[rules]]
name = "inhibitor-is-no-incident"
matchers = ['alertname="InfoInhibitor"']
action = "drop"
classify = false

[[rules]]
name = "postgres-is-database"
matchers = ['job=~"postgres|pgbouncer"']
team = "database"
"""


@contextmanager
def _router(rig: Rig, root: Path, **env: str) -> Iterator[tuple[str, Path]]:
    """Another router process on the rig's receivers and proxy, with the rig's policy and RULES,
    writing its audit file; yields (its URL, the audit file)."""
    root.mkdir(parents=True, exist_ok=True)
    policy = root / "policy.toml"
    policy.write_text(rig.policy.read_text() + RULES)
    (root / "pagerduty.key").write_text(ROUTING_KEY + "\n")
    audit = root / "audit.jsonl"
    settings = {
        "DGEMMA_ALERTS_GATEWAY_API_KEY": "router-key",
        "DGEMMA_ALERTS_DECISION_BUDGET_S": "8",
        "DGEMMA_ALERTS_ALERTMANAGER_TOKEN": AM_TOKEN,
        "DGEMMA_ALERTS_GRAFANA_TOKEN": GRAFANA_TOKEN,
        "DGEMMA_ALERTS_CLOUD_MONITORING_TOKEN": CM_TOKEN,
        "DGEMMA_ALERTS_AUDIT_FILE": str(audit),
        **env,
    }
    try:
        with router_process(root / "router.log", policy, rig.proxy_url, **settings) as url:
            yield url, audit
    except RuntimeError as e:
        pytest.fail(str(e))


def _records(audit: Path, count: int) -> list[dict[str, Any]]:
    assert wait_until(
        lambda: audit.exists() and len(audit.read_text().splitlines()) >= count, 60, interval_s=0.1
    )
    return [json.loads(line) for line in audit.read_text().splitlines()]


def test_rules_decide_around_the_model_and_every_decision_is_recorded(rig: Rig, tmp_path: Path) -> None:
    with (
        _router(rig, tmp_path / "act") as (url, audit),
        alertmanager(tmp_path / "am", f"{url}/v1/alerts/alertmanager", auth=("bearer", AM_TOKEN)) as am,
    ):
        am.fire("InfoInhibitor", {"instance": "prom-1", "severity": "none"})
        am.fire("PgConnections", {"instance": "pg-4", "job": "pgbouncer"})
        key = _key(am.alerts(), "PgConnections")
        (page,) = rig.pages(key, 1)
        records = {r["alert"]: r for r in _records(audit, 2)}
        assert am.wait_log('msg="Notify success"', 10), am.log()
        inhibitor_key = _key(am.alerts(), "InfoInhibitor")
    assert rig.pd.about(inhibitor_key) == []  # dropped by its rule, never asked about, and recorded:
    assert (records["InfoInhibitor"]["action"], records["InfoInhibitor"]["rules"]) == (
        "drop",
        ["inhibitor-is-no-incident"],
    )
    assert records["InfoInhibitor"]["classified"] is False
    details = page["payload"]["custom_details"]
    assert details["classified"] is True and "rule postgres-is-database: team database" in details["reason"]
    assert records["PgConnections"]["action"] == "page" and records["PgConnections"]["mode"] == "act"


def test_shadow_mode_pages_what_alertmanager_sent_and_reports_what_it_would_have_done(
    rig: Rig, tmp_path: Path
) -> None:
    with (
        _router(rig, tmp_path / "shadow", DGEMMA_ALERTS_MODE="shadow") as (url, audit),
        alertmanager(tmp_path / "am", f"{url}/v1/alerts/alertmanager", auth=("bearer", AM_TOKEN)) as am,
    ):
        am.fire("InfoInhibitor", {"instance": "prom-1", "severity": "none"})
        am.fire("PgDown", {"instance": "pg-1", "job": "postgres", "severity": "critical", "team": "database"})
        keys = {name: _key(am.alerts(), name) for name in ("InfoInhibitor", "PgDown")}
        pages = {name: rig.pages(key, 1)[0] for name, key in keys.items()}
        records = {r["alert"]: r for r in _records(audit, 2)}
        am.resolve(
            "PgDown", {"instance": "pg-1", "job": "postgres", "severity": "critical", "team": "database"}
        )
        assert [e["event_action"] for e in rig.pages(keys["PgDown"], 2)] == ["trigger", "resolve"]
        _records(audit, 3)
    for page in pages.values():  # both paged as sent, the rule's drop included
        details = page["payload"]["custom_details"]
        assert details["route"] == "oncall" and details["classified"] is False, details
        assert details["reason"] == "shadow mode: paged as sent"
    assert pages["PgDown"]["payload"]["severity"] == "critical"
    would = records["InfoInhibitor"]["would"]
    assert would["action"] == "drop" and would["rules"] == ["inhibitor-is-no-incident"]
    assert records["PgDown"]["would"]["route"] == "teams" and records["PgDown"]["would"]["classified"] is True
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "alerts", "report", str(audit), "--out", str(tmp_path / "out")],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "2 firing alerts" in report
    assert "| **pages avoided** (would be a ticket or a drop) | **1 (50%)** |" in report
    # The tiny model's team is noise: the comparison is made, whatever its outcome.
    assert re.search(r"\| team agreement with the sender's team label \| [01]/1 \(\d+%\) \|", report), report


def test_replay_shows_what_the_policy_would_do(rig: Rig, stack: LocalStack, tmp_path: Path) -> None:
    deliveries = tmp_path / "deliveries.jsonl"
    lines = [
        {"source": "alertmanager", "payload": json.loads((DATA / "alertmanager_firing.json").read_text())},
        {
            "source": "cloud-monitoring",
            "payload": json.loads((DATA / "cloud_monitoring_open.json").read_text()),
        },
    ]
    deliveries.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    sent = len(rig.pd.accepted)
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "alerts", "replay", str(deliveries), "--gateway", stack.url,
         "--policy", str(rig.policy)],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200", "DGEMMA_ALERTS_GATEWAY_API_KEY": "test"},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    titles = [a["labels"]["alertname"] for a in lines[0]["payload"]["alerts"]]
    titles.append(lines[1]["payload"]["incident"]["policy_name"])
    assert all(title[:12] in done.stdout for title in titles), done.stdout
    assert "3 alert(s)" in done.stdout and "nothing sent" in done.stdout
    assert "fallback" not in done.stdout  # each was classified
    assert len(rig.pd.accepted) == sent  # a replay pages nobody
