"""The kit's alerts have one source, monitoring/alerts.yaml, and two targets: the Prometheus rules
`make docs` renders from it (monitoring/prometheus/dgemma.rules.yml) and the Cloud Monitoring
policies Terraform makes of it (terraform/main.tf, evaluated by the real CLI). Both come out with the
same alerts, and every kit metric a Prometheus alert reads is watched in Cloud Monitoring too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy.cloud.inputs import PLACEHOLDER_IMAGE
from scripts.gen_docs import ALERTS, RULES, prometheus_rules
from tests.helpers.terraform import TERRAFORM, hcl, terraform_eval

DEPLOYED = {
    "project_id": "my-gpu-project", "region": "europe-west4", "image": PLACEHOLDER_IMAGE,
    "router_image": PLACEHOLDER_IMAGE,
}  # fmt: skip
# A series a query reads: a kit metric, or the scrape's own `up`.
METRIC = re.compile(r"\b(dgemma_[a-z_]+|up)\b(?=\{|\[|\)|\s|$)")
RECORDED = re.compile(r"\bdgemma:[a-z_0-9:]+")
# A kit metric in a Cloud Monitoring filter: prometheus.googleapis.com/NAME/KIND.
GMP_METRIC = re.compile(r"prometheus\.googleapis\.com/(dgemma_[a-z_]+)/(?:histogram|counter|gauge)")
SERIES_SUFFIXES = ("_bucket", "_count", "_sum")


def source() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(ALERTS.read_text())
    return doc


def source_alerts() -> dict[str, dict[str, Any]]:
    return {name: a for group in source()["groups"].values() for name, a in group.items()}


def rendered_rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def family(series: str) -> str:
    """A histogram's series by its family's name, as Cloud Monitoring names the metric."""
    for suffix in SERIES_SUFFIXES:
        if series.endswith(suffix):
            return series.removesuffix(suffix)
    return series


def read_by(expr: str, records: dict[str, str]) -> set[str]:
    """The series an expression reads, through the recording rules it names."""
    found = set(METRIC.findall(expr))
    for name in RECORDED.findall(expr):
        found |= read_by(records[name], records)
    return found


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Terraform's policies of the source, both services deployed, the switch on (the defaults)."""
    built = terraform_eval(
        tmp_path_factory.mktemp("tf"), {"kit": "local.alert_policies", "slo": "local.slo_alerts"}, DEPLOYED
    )
    assert isinstance(built, dict), built
    return built


@pytest.mark.unit
def test_the_rules_file_is_rendered_from_the_source() -> None:
    assert RULES.read_text() == prometheus_rules(), "stale: run `make docs`"


@pytest.mark.unit
def test_each_alert_of_the_source_says_what_both_targets_need() -> None:
    alerts = source_alerts()
    keys = [a.get("key", a.get("slo")) for a in alerts.values() if a.get("only") != "prometheus"]
    assert len(keys) == len(set(keys)), keys  # one Cloud Monitoring policy each
    # Cloud Monitoring has no Alertmanager: its Watchdog, the heartbeat, is Prometheus's alone.
    assert {name for name, a in alerts.items() if a.get("only") == "prometheus"} == {"Watchdog"}
    for name, a in alerts.items():
        assert a["severity"] in ("critical", "warning", "none"), name
        assert re.fullmatch(r"\d+[smh]", a.get("for", "0s")), (name, a.get("for"))  # main.tf's reading
        if a.get("only") == "prometheus":
            continue
        assert a["service"] in ("gateway", "router") and a["title"] and a["runbook"], name
        assert ("slo" in a) != ("expr" in a), name  # an SLO's burn, or a condition of its own
        assert a.get("switch") in (None, "deadman_switch"), name  # main.tf's local.alert_switches
    assert [n for n, a in alerts.items() if a.get("around_router")] == ["DgemmaAlertsHeartbeatMissing"]


@pytest.mark.unit
def test_every_series_of_the_source_names_its_service() -> None:
    """Each series an expression reads carries a service's slot, which Terraform fills with this
    deployment's namespace too: none counts another deployment's in the project."""
    doc = source()
    texts = [str(a["expr"]) for a in source_alerts().values() if "expr" in a and a["expr"] != "vector(1)"]
    texts += [doc["slos"][name]["bad_ratio"] for name in ("availability", "latency")]
    texts += list(doc["records"].values())
    for text in texts:
        for match in METRIC.finditer(text):
            assert re.match(r"\{\$\{(gateway|router)\}", text[match.end() :]), (match.group(1), text)


@pytest.mark.integration
def test_both_targets_have_the_same_alerts(cloud: dict[str, dict[str, Any]]) -> None:
    """The rendered Prometheus rules and the evaluated Cloud Monitoring policies, side by side: the
    same alerts (Watchdog aside), each with the same severity, `for` and runbook."""
    prometheus = {r["alert"]: r for r in rendered_rules() if "alert" in r}
    policies = {p["alert"]: p for p in [*cloud["kit"].values(), *cloud["slo"].values()]}
    assert len(policies) == len(cloud["kit"]) + len(cloud["slo"])
    assert set(prometheus) - set(policies) == {"Watchdog"}
    assert not set(policies) - set(prometheus)
    seconds = {"s": 1, "m": 60, "h": 3600}
    for name, policy in policies.items():
        rule = prometheus[name]
        assert policy["severity"] == rule["labels"]["severity"].upper(), name
        assert policy["runbook"] == rule["annotations"]["runbook"], name
        if "duration" in policy:  # a condition of its own (an SLO's burn has the pairs' windows)
            wanted = rule.get("for", "0s")
            assert policy["duration"] == f"{int(wanted[:-1]) * seconds[wanted[-1]]}s", name
    # What Terraform makes of them: a policy per entry (monitoring.tf's for_each).
    resources = {
        name: body
        for block in hcl(TERRAFORM / "monitoring.tf")["resource"]
        for kind, named in block.items()
        if kind == "google_monitoring_alert_policy"
        for name, body in named.items()
    }
    assert resources["kit"]["for_each"] == "${local.alert_policies}"
    assert resources["slo_burn"]["for_each"] == "${local.slo_alerts}"
    assert set(cloud["slo"]) == {"availability", "latency"}  # the SLO objects monitoring.tf makes


@pytest.mark.integration
def test_every_metric_a_prometheus_alert_reads_is_watched_in_cloud_monitoring(
    cloud: dict[str, dict[str, Any]],
) -> None:
    rules = rendered_rules()
    records = {r["record"]: r["expr"] for r in rules if "record" in r}
    read = {family(s) for r in rules if "alert" in r for s in read_by(r["expr"], records)}
    assert {"dgemma_http_responses_total", "dgemma_alerts_fallback_total", "up"} <= read, read
    watched = {family(s) for p in cloud["kit"].values() for s in METRIC.findall(p["query"])}
    watched |= set(GMP_METRIC.findall((TERRAFORM / "monitoring.tf").read_text()))  # the latency SLO's
    assert not read - watched, (
        f"read by a Prometheus alert, watched by no Cloud Monitoring policy or SLO: {read - watched}"
    )


@pytest.mark.integration
def test_cloud_monitoring_fills_the_slots_with_this_deployments_series(
    cloud: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    for policy in cloud["kit"].values():
        assert "${" not in policy["query"] + policy["runbook"], policy
        for match in METRIC.finditer(policy["query"]):
            rest = policy["query"][match.end() :]
            assert re.match(r'\{job="dgemma-(gateway|router)",namespace="dgemma(-router)?"', rest), policy
    named = terraform_eval(tmp_path, {"kit": "local.alert_policies"}, {**DEPLOYED, "service_name": "other"})
    assert isinstance(named, dict), named
    assert 'namespace="other-router"' in named["kit"]["sink_failures"]["query"]
