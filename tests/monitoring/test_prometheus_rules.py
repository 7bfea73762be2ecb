"""The kit's queries: its Prometheus rules (monitoring/prometheus/), which Prometheus's own promtool checks
and unit-tests; the dashboards' PromQL (Cloud Monitoring's, as Terraform builds them, and Grafana's)
and the alert policies', which promtool parses; and every metric and label any of them names, which
the real gateway and router must export (scraped from their /metrics after a decision and an alert
went through them)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from deploy.cloud.inputs import PLACEHOLDER_IMAGE
from tests.helpers.terraform import TERRAFORM, terraform_eval

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "monitoring" / "prometheus" / "dgemma.rules.yml"
RULES_TEST = RULES.with_name("dgemma.rules.test.yml")
# A kit metric in PromQL, with its matchers if any: dgemma_x_total{a="b",c=~"d"}.
SELECTOR = re.compile(r"\b(dgemma_[a-z_]+)\b(?:\{([^}]*)\})?")
# A kit metric in a Cloud Monitoring filter: prometheus.googleapis.com/NAME/KIND.
GMP_METRIC = re.compile(r"prometheus\.googleapis\.com/(dgemma_[a-z_]+)/(histogram|counter|gauge)")
GRAFANA = ROOT / "monitoring" / "grafana" / "dgemma.json"
# Labels the scraper adds to every series (Prometheus's job; the Cloud Run collector's namespace).
TARGET_LABELS = {"job", "instance", "namespace"}
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)\s*\(\s*(?:increase|rate)\((dgemma_[a-z_]+)")


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not on PATH: `make test` installs Debian's prometheus (make prometheus)"
    return subprocess.run([promtool, *args], cwd=RULES.parent, capture_output=True, text=True, timeout=120)


def test_promtool_checks_the_rules_and_their_unit_tests_pass() -> None:
    checked = _promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _promtool("test", "rules", RULES_TEST.name)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def used(text: str) -> dict[str, set[str]]:
    """Each kit metric the rules name, with the labels they match or group it by."""
    found: dict[str, set[str]] = {}
    for name, matchers in SELECTOR.findall(text):
        labels = {m.split("=")[0].strip().rstrip("!~") for m in matchers.split(",") if "=" in m}
        found.setdefault(name, set()).update(labels)
    for labels, name in GROUPING.findall(text):
        found.setdefault(name, set()).update(label.strip() for label in labels.split(",") if label.strip())
    return found


def exported(text: str) -> dict[str, set[str]]:
    """Each series name a /metrics page exposes (`_total`, `_bucket`, ...; a family without samples
    by the names its type gives it), with the label names its samples carry."""
    out: dict[str, set[str]] = {}
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
    for family in text_string_to_metric_families(text):
        for suffix in suffixes.get(family.type, ("",)):
            out.setdefault(family.name + suffix, set())
        for sample in family.samples:
            out.setdefault(sample.name, set()).update(sample.labels)
    return out


def shipped_queries(workdir: Path) -> dict[str, list[str]]:
    """Every PromQL query the kit ships besides its rules, by where it is used: the Cloud Monitoring
    dashboards and alert policies as Terraform builds them (the real CLI, both services deployed),
    and the Grafana dashboard."""
    deployed = {
        "project_id": "my-gpu-project", "region": "europe-west4", "image": PLACEHOLDER_IMAGE,
        "router_image": PLACEHOLDER_IMAGE,
    }  # fmt: skip
    built = terraform_eval(
        workdir, {"dashboards": "local.dashboards_json", "policies": "local.alert_policies"}, deployed
    )
    assert isinstance(built, dict), built
    cloud = [
        data_set["timeSeriesQuery"]["prometheusQuery"]
        for dashboard in built["dashboards"].values()
        for tile in json.loads(dashboard)["mosaicLayout"]["tiles"]
        for data_set in tile["widget"]["xyChart"]["dataSets"]
        if "prometheusQuery" in data_set["timeSeriesQuery"]
    ]
    panels = json.loads(GRAFANA.read_text())["panels"]
    grafana = [target["expr"] for panel in panels for target in panel.get("targets", [])]
    return {
        "Cloud Monitoring dashboards": cloud,
        "alert policies": [policy["query"] for policy in built["policies"].values()],
        "Grafana dashboard": grafana,
    }


def test_every_shipped_query_is_promql_and_each_panel_is_shipped(tmp_path: Path) -> None:
    """promtool parses each query as a rule's expression (Cloud Monitoring's PromQL is Prometheus's);
    each PromQL panel of monitoring/dashboards.yaml is in both dashboards, narrowed to its service in
    the cloud."""
    (tmp_path / "tf").mkdir()
    queries = shipped_queries(tmp_path / "tf")
    rules = {
        "groups": [
            {"name": where, "rules": [{"record": f"dgemma:shipped:{i}", "expr": q} for i, q in enumerate(qs)]}
            for where, qs in queries.items()
        ]
    }
    (tmp_path / "shipped.rules.yml").write_text(yaml.safe_dump(rules))
    checked = _promtool("check", "rules", str(tmp_path / "shipped.rules.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    panels = yaml.safe_load((ROOT / "monitoring" / "dashboards.yaml").read_text())
    plain = [q for service in panels.values() for p in service["panels"] for q in p.get("promql", [])]
    assert plain and queries["Grafana dashboard"] == plain
    assert len(queries["Cloud Monitoring dashboards"]) == len(plain)
    for query in queries["Cloud Monitoring dashboards"] + queries["alert policies"]:
        assert re.search(r'job="dgemma-(gateway|router)",namespace="dgemma(-router)?"', query), query


def test_used_reads_names_matchers_and_groupings() -> None:
    text = 'sum by (sink) (increase(dgemma_a_total[5m])) / dgemma_b_bucket{le="0.5",route=~"/v1.*"}'
    text += " + dgemma:c:rate5m"  # a recording rule's name is not an exported series
    assert used(text) == {"dgemma_a_total": {"sink"}, "dgemma_b_bucket": {"le", "route"}}


def test_every_metric_and_label_the_kit_names_is_exported(service: str, router: str, tmp_path: Path) -> None:
    decision = {
        "model": "dgemma",
        "state": {"alert": "DiskFull"},
        "questions": {"page": {"type": "noul", "instructions": "Should on-call be paged now?"}},
    }
    done = httpx.post(f"{service}/v1/systemone", json=decision, headers={"authorization": "Bearer any"})
    assert done.status_code == 200, done.text
    alert = {
        "version": "4",
        "status": "firing",
        "receiver": "dgemma",
        "groupKey": '{}:{alertname="DiskFull"}',
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "DiskFull", "instance": "db-1"},
                "annotations": {"summary": "disk 97 % full"},
                "startsAt": "2026-12-04T10:00:00Z",
                "fingerprint": "0123456789abcdef",
            },
            {  # the dead-man's switch's heartbeat
                "status": "firing",
                "labels": {"alertname": "Watchdog"},
                "annotations": {},
                "startsAt": "2026-12-04T09:00:00Z",
                "fingerprint": "fedcba9876543210",
            },
        ],
    }
    hook = httpx.post(f"{router}/v1/alerts/alertmanager", json=alert, headers={"authorization": "Bearer am"})
    assert hook.status_code < 300, hook.text
    pages = {
        url: httpx.get(f"{url}/metrics", headers={"authorization": auth}).text
        for url, auth in ((service, "Bearer any"), (router, "Bearer am"))
    }
    for url, text in pages.items():  # what a collector writes per scrape (terraform/README.md, its cost)
        print(f"{url}: {sum(len(f.samples) for f in text_string_to_metric_families(text))} series")
    series: dict[str, set[str]] = {}
    for text in pages.values():
        for name, labels in exported(text).items():
            series.setdefault(name, set()).update(labels)
    shipped = [RULES.read_text(), *(q for qs in shipped_queries(tmp_path).values() for q in qs)]
    wanted: dict[str, set[str]] = {}
    for text in shipped:
        for name, labels in used(text).items():
            wanted.setdefault(name, set()).update(labels - TARGET_LABELS)
    assert wanted, "the kit's queries name no kit metric"
    missing = sorted(name for name in wanted if name not in series)
    assert not missing, f"the kit's queries name series no process exports: {missing}"
    # The SLO's and any filter's metric, as Cloud Monitoring names a scraped family by its type.
    kinds = {"histogram": "_bucket", "counter": "_total", "gauge": ""}
    filtered = GMP_METRIC.findall((TERRAFORM / "monitoring.tf").read_text())
    assert filtered, "monitoring.tf names no kit metric"
    assert not [f"{n}/{k}" for n, k in filtered if n + kinds[k] not in series], filtered
    # A label can be checked only where the series has samples (a labelled family shows none before
    # its first event: the sinks' and the ledger's failures here).
    unlabelled = {n: sorted(w - series[n]) for n, w in wanted.items() if series[n] and w - series[n] - {"le"}}
    assert not unlabelled, f"labels the exported series do not carry: {unlabelled}"
