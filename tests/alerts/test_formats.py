"""The three webhook shapes as Alert records, from real-shaped samples (tests/data/alerts/SOURCES.md),
and the 400s that name the malformed field."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from app.alerts.formats import Batch, from_grafana, parse, parse_body
from app.alerts.records import Alert, Source, labels_fingerprint
from app.core.errors import InvalidBody, InvalidRequest

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data" / "alerts"
UTC = dt.UTC


def sample(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return value


def refused(source: Source, payload: Any) -> str:
    with pytest.raises(InvalidRequest) as caught:
        parse(source, payload)
    assert type(caught.value) is InvalidRequest
    assert isinstance(caught.value.detail, str)
    return caught.value.detail


# -- Alertmanager ------------------------------------------------------------------------------


def test_alertmanager_firing_group_is_two_alerts() -> None:
    batch = parse("alertmanager", sample("alertmanager_firing"))
    assert batch.truncated == 0
    assert batch.group_key == '{}:{alertname="DiskFull"}'
    first, second = batch.alerts
    assert first == Alert(
        source="alertmanager",
        key="alertmanager:9556f853bb27ef8b",
        status="firing",
        title="DiskFull",
        summary="Disk 97% on db-1",
        labels={"alertname": "DiskFull", "instance": "db-1", "severity": "critical"},
        annotations={"summary": "Disk 97% on db-1"},
        started_at=dt.datetime(2026, 11, 30, 10, 15, 2, 310861, tzinfo=UTC),
        url=None,  # amtool's alerts have an empty generatorURL
    )
    assert second.key == "alertmanager:0facb163a9753c87"
    assert second.status == "firing"
    assert second.summary == "Disk 91% on db-2"  # no summary annotation: the description
    assert second.annotations["runbook_url"] == "https://runbooks.example.com/disk-full"
    assert second.url is not None and second.url.startswith("http://prometheus:9090/graph?g0.expr=")
    assert second.started_at == dt.datetime(2026, 11, 30, 10, 15, 17, 4512, tzinfo=UTC)


def test_alertmanager_resolved_keeps_the_key_of_its_firing() -> None:
    firing = parse("alertmanager", sample("alertmanager_firing")).alerts[0]
    (resolved,) = parse("alertmanager", sample("alertmanager_resolved")).alerts
    assert resolved.status == "resolved"
    assert resolved.key == firing.key
    assert resolved.started_at == firing.started_at


def test_alertmanager_truncated_group_mixes_statuses_and_counts_the_rest() -> None:
    batch = parse("alertmanager", sample("alertmanager_truncated"))
    assert batch.truncated == 3
    assert [(a.key, a.status) for a in batch.alerts] == [
        ("alertmanager:20f7da56295f2463", "firing"),
        ("alertmanager:e6898d1b2c267924", "resolved"),
    ]
    assert {a.title for a in batch.alerts} == {"InstanceDown"}
    assert batch.alerts[0].url == "http://prometheus:9090/graph?g0.expr=up+%3D%3D+0&g0.tab=1"


def test_fingerprints_of_the_samples_are_alertmanagers_own() -> None:
    for name in ("alertmanager_firing", "alertmanager_resolved", "alertmanager_truncated"):
        for alert in sample(name)["alerts"]:
            assert labels_fingerprint(alert["labels"]) == alert["fingerprint"]
    # Observed from a real Alertmanager (reference) and in a third-party sample (SOURCES.md).
    assert labels_fingerprint({"alertname": "DiskFull", "instance": "db-1", "severity": "critical"}) == (
        "9556f853bb27ef8b"
    )


def test_zero_start_time_means_none() -> None:
    payload = sample("alertmanager_firing")
    payload["alerts"][0]["startsAt"] = "0001-01-01T00:00:00Z"
    assert parse("alertmanager", payload).alerts[0].started_at is None


def test_summary_falls_back_to_the_title() -> None:
    payload = sample("alertmanager_firing")
    payload["alerts"][0]["annotations"] = {"summary": "  ", "runbook_url": "https://x"}
    assert parse("alertmanager", payload).alerts[0].summary == "DiskFull"


def test_null_maps_and_missing_optional_fields_are_accepted() -> None:
    payload = {"alerts": [{"status": "firing", "fingerprint": "abc", "labels": None, "annotations": None}]}
    (alert,) = parse("alertmanager", payload).alerts
    assert (alert.labels, alert.annotations, alert.started_at, alert.url) == ({}, {}, None, None)
    assert alert.title == "(no alertname)"


def test_unknown_and_retyped_unread_fields_are_ignored() -> None:
    payload = sample("alertmanager_firing")
    expected = parse("alertmanager", copy.deepcopy(payload))
    payload["new_top_level"] = {"any": ["thing"]}
    payload["receiver"] = 7  # documented, but not read: its type does not matter
    payload["commonLabels"] = None
    payload["alerts"][0]["endsAt"] = "not a time"
    payload["alerts"][0]["extra"] = 1
    assert parse("alertmanager", payload) == expected


# -- Grafana -----------------------------------------------------------------------------------


def test_grafana_firing() -> None:
    batch = parse("grafana", sample("grafana_firing"))
    assert batch == Batch(batch.alerts, truncated=0, group_key="{}:{}")
    first, second = batch.alerts
    assert first == Alert(
        source="grafana",
        key="grafana:c6eadffa33fcdf37",
        status="firing",
        title="High memory usage",
        summary="This alert was triggered for zone us-1",
        labels={"alertname": "High memory usage", "team": "blue", "zone": "us-1"},
        annotations={
            "description": "The system has high memory usage",
            "runbook_url": "https://myrunbook.com/runbook/1234",
            "summary": "This alert was triggered for zone us-1",
        },
        started_at=dt.datetime(2021, 10, 12, 7, 51, 3, 157076, tzinfo=UTC),
        url="https://play.grafana.org/alerting/1afz29v7z/edit",
    )
    assert (second.key, second.title) == ("grafana:bc97ff14869b13e3", "High CPU usage")


def test_grafana_resolved() -> None:
    (alert,) = parse("grafana", sample("grafana_resolved")).alerts
    assert (alert.key, alert.status) == ("grafana:c6eadffa33fcdf37", "resolved")
    assert alert.started_at == dt.datetime(
        2021, 10, 12, 9, 51, 3, 157076, tzinfo=dt.timezone(dt.timedelta(hours=2))
    )


@pytest.mark.parametrize("missing", [None, "", "absent"])
def test_grafana_without_fingerprint_derives_a_stable_one(missing: str | None) -> None:
    payload = sample("grafana_firing")
    for alert in payload["alerts"]:
        if missing == "absent":
            del alert["fingerprint"]
        else:
            alert["fingerprint"] = missing
    first, second = parse("grafana", payload).alerts
    assert first.key == "grafana:" + labels_fingerprint(
        {"alertname": "High memory usage", "team": "blue", "zone": "us-1"}
    )
    assert first.key != second.key
    # The same labels in another order, another delivery: the same key.
    again = copy.deepcopy(payload)
    again["alerts"][0]["labels"] = dict(reversed(list(again["alerts"][0]["labels"].items())))
    again["alerts"][0]["status"] = "resolved"
    assert from_grafana(again).alerts[0].key == first.key


def test_grafana_url_falls_back_to_panel_then_dashboard() -> None:
    payload = sample("grafana_firing")
    payload["alerts"][0]["generatorURL"] = ""
    payload["alerts"][0]["dashboardURL"] = "https://g/d/abc"
    assert parse("grafana", payload).alerts[0].url == "https://g/d/abc"
    payload["alerts"][0]["panelURL"] = "https://g/d/abc?viewPanel=2"
    assert parse("grafana", payload).alerts[0].url == "https://g/d/abc?viewPanel=2"


# -- Cloud Monitoring --------------------------------------------------------------------------


def test_cloud_monitoring_open() -> None:
    batch = parse("cloud-monitoring", sample("cloud_monitoring_open"))
    assert (batch.truncated, batch.group_key) == (0, None)
    (alert,) = batch.alerts
    assert alert == Alert(
        source="cloud-monitoring",
        key="cloud-monitoring:0.nwg9th6llz4w",
        status="firing",
        title="VM sent bytes",
        summary="Sent bytes for example-project pay-template with metric labels {loadbalanced=false} "
        "is above the threshold of 2000.000 with a value of 5072.020.",
        labels={
            "instance_id": "3453121075891706391",
            "project_id": "example-project",
            "zone": "asia-southeast1-c",
            "loadbalanced": "false",
            "severity": "critical",  # the policy's severity ("Critical"), as Alertmanager rules write it
            "team": "payments",
        },
        annotations={
            "documentation": "Outbound traffic above 2 kB/s on the payment template VM. Check for a "
            "runaway job before restarting.",
            "subject": "[ALERT - Critical] Sent bytes on pay-template",
            "condition": "VM Instance - Sent bytes",
            "resource": "pay-template",
            "observed_value": "5072.020",
            "threshold_value": "2000",
        },
        started_at=dt.datetime(2025, 8, 27, 11, 20, 29, tzinfo=UTC),
        url="https://console.cloud.google.com/monitoring/alerting/alerts/0.nwg9th6llz4w"
        "?channelType=webhook&project=example-project",
    )


def test_cloud_monitoring_closed() -> None:
    (alert,) = parse("cloud-monitoring", sample("cloud_monitoring_closed")).alerts
    assert alert.key == "cloud-monitoring:0.opqiw61fsv7p"
    assert alert.status == "resolved"
    assert alert.title == "Monitor-Project-Cluster"
    assert alert.summary.endswith("returned to normal with a value of 0.835.")
    assert alert.labels == {
        "instance_id": "11223344",
        "project_id": "internal-project",
        "zone": "us-central1-c",
        "instance_name": "the name of the VM instance",
        "user-label-1": "important label",
        "user-label-2": "another label",
    }
    assert alert.started_at == dt.datetime(2020, 1, 1, 1, 1, 1, tzinfo=UTC)
    assert alert.url == (
        "https://console.cloud.google.com/monitoring/alerting/incidents/0.lxfiw61fsv7p?project=internal-project"
    )
    assert alert.annotations["resource"] == "gke-cluster-1-default-pool-e2df4cbd-dgp3"
    assert "subject" not in alert.annotations


def test_cloud_monitoring_labels_are_stringified_and_policy_labels_win() -> None:
    payload = sample("cloud_monitoring_open")
    incident = payload["incident"]
    incident["metric"]["labels"] = {"response_code": 500, "cached": True, "ratio": 0.5, "gone": None}
    incident["resource"]["labels"]["zone"] = {"nested": [1]}
    incident["policy_user_labels"] = {"zone": "policy-zone", "tier": 1}
    incident["observed_value"] = 5072.02  # a number in some senders' samples
    (alert,) = parse("cloud-monitoring", payload).alerts
    assert alert.labels["response_code"] == "500"
    assert alert.labels["cached"] == "true"
    assert alert.labels["ratio"] == "0.5"
    assert "gone" not in alert.labels
    assert alert.labels["zone"] == "policy-zone"  # the policy's user labels win a collision
    assert alert.labels["tier"] == "1"
    assert all(isinstance(v, str) for v in alert.labels.values())
    assert alert.annotations["observed_value"] == "5072.02"


def test_cloud_monitoring_minimal_and_lenient_fields() -> None:
    payload = {"incident": {"incident_id": "0.x", "state": "OPEN", "started_at": "1579559444"}}
    (alert,) = parse("cloud-monitoring", payload).alerts
    assert (alert.status, alert.title, alert.summary) == ("firing", "(no policy name)", "(no policy name)")
    assert alert.started_at == dt.datetime(2020, 1, 20, 22, 30, 44, tzinfo=UTC)
    assert (alert.labels, alert.annotations, alert.url) == ({}, {}, None)
    payload["incident"]["condition_name"] = "Uptime Health Check"
    assert parse("cloud-monitoring", payload).alerts[0].title == "Uptime Health Check"


@pytest.mark.parametrize(("state", "status"), [("CLOSED", "resolved"), ("acknowledged", "firing")])
def test_cloud_monitoring_states_other_than_closed_fire(state: str, status: str) -> None:
    payload = {"incident": {"incident_id": "0.x", "state": state}}
    assert parse("cloud-monitoring", payload).alerts[0].status == status


# -- malformed payloads ------------------------------------------------------------------------


def _alertmanager_with(index: int, **changes: Any) -> dict[str, Any]:
    payload = sample("alertmanager_firing")
    payload["alerts"].append(copy.deepcopy(payload["alerts"][0]))
    for field, value in changes.items():
        if value is KeyError:
            del payload["alerts"][index][field]
        else:
            payload["alerts"][index][field] = value
    return payload


@pytest.mark.parametrize(
    ("source", "payload", "message"),
    [
        (
            "alertmanager",
            _alertmanager_with(2, fingerprint=KeyError),
            "alerts[2].fingerprint: field required",
        ),
        ("alertmanager", _alertmanager_with(1, fingerprint=""), "alerts[1].fingerprint: must not be empty"),
        (
            "alertmanager",
            _alertmanager_with(0, status="pending"),
            'alerts[0].status: expected "firing" or "resolved", got "pending"',
        ),
        (
            "alertmanager",
            _alertmanager_with(0, startsAt="yesterday"),
            'alerts[0].startsAt: expected an RFC 3339 time, got "yesterday"',
        ),
        (
            "alertmanager",
            _alertmanager_with(0, startsAt="2026-11-30T10:15:02"),  # no offset: not RFC 3339
            'alerts[0].startsAt: expected an RFC 3339 time, got "2026-11-30T10:15:02"',
        ),
        (
            "alertmanager",
            _alertmanager_with(1, labels={"app.kubernetes.io/name": 3}),
            'alerts[1].labels["app.kubernetes.io/name"]: expected a string, got 3',
        ),
        (
            "alertmanager",
            _alertmanager_with(0, annotations=["x"]),
            "alerts[0].annotations: expected an object, got an array",
        ),
        (
            "alertmanager",
            _alertmanager_with(0, generatorURL=5),
            "alerts[0].generatorURL: expected a string, got 5",
        ),
        ("alertmanager", {"version": "4"}, "alerts: field required"),
        ("alertmanager", {"alerts": "x"}, 'alerts: expected an array, got "x"'),
        ("alertmanager", {"alerts": [7]}, "alerts[0]: expected an object, got 7"),
        (
            "alertmanager",
            {"alerts": [], "truncatedAlerts": -1},
            "truncatedAlerts: must be at least 0, got -1",
        ),
        ("alertmanager", [], "body: expected an object, got an array"),
        ("alertmanager", "text", 'body: expected an object, got "text"'),
        ("grafana", {"alerts": [{"fingerprint": "f"}]}, "alerts[0].status: field required"),
        (
            "grafana",
            {"alerts": [{"status": "firing", "panelURL": []}]},
            "alerts[0].panelURL: expected a string, got an array",
        ),
        (
            "cloud-monitoring",
            {"incident": {"incident_id": "i", "state": ""}},
            "incident.state: must not be empty",
        ),
        ("cloud-monitoring", {"incident": {"state": "open"}}, "incident.incident_id: field required"),
        (
            "cloud-monitoring",
            {"incident": {"incident_id": 5, "state": "open"}},
            "incident.incident_id: expected a string, got 5",
        ),
        ("cloud-monitoring", {"version": "1.2"}, "incident: field required"),
        ("cloud-monitoring", {"incident": None}, "incident: expected an object, got null"),
        (
            "cloud-monitoring",
            {"incident": {"incident_id": "i", "state": "open", "started_at": "soon"}},
            'incident.started_at: expected seconds since the epoch, got "soon"',
        ),
        (
            "cloud-monitoring",
            {"incident": {"incident_id": "i", "state": "open", "started_at": True}},
            "incident.started_at: expected seconds since the epoch, got true",
        ),
        (
            "cloud-monitoring",
            {"incident": {"incident_id": "i", "state": "open", "started_at": 1e300}},
            "incident.started_at: expected seconds since the epoch, got 1e+300",
        ),
        (
            "cloud-monitoring",
            {"incident": {"incident_id": "i", "state": "open", "resource": {"labels": [1]}}},
            "incident.resource.labels: expected an object, got an array",
        ),
    ],
)
def test_malformed_payload_names_its_field(source: Source, payload: Any, message: str) -> None:
    assert refused(source, payload) == message


def test_many_errors_are_named_then_counted() -> None:
    payload = {"alerts": [{"status": "x"}, {"status": "y"}, {"status": "z"}]}
    assert refused("alertmanager", payload) == (
        'alerts[0].status: expected "firing" or "resolved", got "x"; alerts[0].fingerprint: field required; '
        'alerts[1].status: expected "firing" or "resolved", got "y"; and 3 more'
    )


def test_an_echoed_value_is_cut_short() -> None:
    message = refused("alertmanager", {"alerts": [{"fingerprint": "f", "status": "x" * 500}]})
    assert message.startswith('alerts[0].status: expected "firing" or "resolved", got "xxx')
    assert message.endswith("...")
    assert len(message) < 120


def test_body_bytes_parse_and_broken_json_is_the_gateways_422() -> None:
    raw = (DATA / "grafana_firing.json").read_bytes()
    assert parse_body("grafana", raw) == parse("grafana", json.loads(raw))
    with pytest.raises(InvalidBody) as caught:
        parse_body("alertmanager", b'{"alerts": [')
    detail = caught.value.detail
    assert isinstance(detail, list) and detail[0]["type"] == "json_invalid"
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        parse_body("alertmanager", b'{"alerts": ' + b"[" * 100 + b"]" * 100 + b"}")


@pytest.mark.parametrize(
    ("severity", "user_labels", "expected"),
    [
        ("Critical", {}, "critical"),
        ("ERROR", {}, "error"),
        ("No severity", {}, None),
        (None, {}, None),
        ("Warning", {"severity": "page"}, "page"),  # the policy's user label wins
    ],
)
def test_a_cloud_monitoring_policys_severity_is_its_severity_label(
    severity: str | None, user_labels: dict[str, str], expected: str | None
) -> None:
    payload = sample("cloud_monitoring_open")
    payload["incident"]["severity"] = severity
    payload["incident"]["policy_user_labels"] = user_labels
    (alert,) = parse("cloud-monitoring", payload).alerts
    assert alert.labels.get("severity") == expected
