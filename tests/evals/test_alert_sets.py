"""The labelled alert sets of evals/alerts/: every line is a delivery the router parses, with one
`expected` entry per firing alert in the default policy's teams and levels; the public set is its
builder's output (whole, when the pinned rules file is at hand; otherwise the digest recorded in the
docs and a few lines rebuilt from rules quoted here); the CC BY 4.0 notice is there.

The rules quoted in RULES_SAMPLE are from samber/awesome-prometheus-alerts (CC BY 4.0, attribution
in evals/alerts/NOTICE.md): the same values as in the pinned rules.yml, long lines folded, without
the `logo`, `doc_url` and neighbouring rules."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.alerts.formats import parse
from app.alerts.policy import Policy
from app.alerts.records import SOURCES, labels_fingerprint
from app.alerts.settings import DEFAULT_POLICY
from evals.alerts import build_public
from evals.alerts.gofmt import go_value
from evals.alerts.public import gotemplate

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SETS = ROOT / "evals" / "alerts"
PUBLIC = SETS / "awesome-prometheus-alerts.jsonl"
HANDWRITTEN = SETS / "handwritten.jsonl"
FILES = (PUBLIC, HANDWRITTEN)
# The pinned _data/rules.yml (CC BY 4.0, tests/data/alerts/SOURCES.md), to rebuild the whole file.
RULES = ROOT / "tests" / "data" / "alerts" / "awesome-prometheus-alerts-rules.yml.gz"

POLICY = Policy.load(DEFAULT_POLICY)
TEAMS = set(POLICY.spec.teams)
LEVELS = set(POLICY.spec.severity.levels)
SEVERITY_WORD = re.compile(r"\b(critical|warning|info|error)\b", re.IGNORECASE)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_line_parses_and_expected_is_aligned(path: Path) -> None:
    records = lines(path)
    assert records
    for number, record in enumerate(records, start=1):
        where = f"{path.name}:{number}"
        assert set(record) <= {"source", "payload", "expected", "note"}, where
        assert record["source"] in SOURCES, where
        alerts = parse(record["source"], record["payload"]).alerts
        assert len(record["expected"]) == len(alerts) >= 1, where
        for alert, expected in zip(alerts, record["expected"], strict=True):
            assert alert.status == "firing", where
            assert set(expected) == {"page", "team", "severity"}, where
            assert isinstance(expected["page"], bool), where
            assert expected["team"] in TEAMS, where
            assert expected["severity"] in LEVELS, where
        if "note" in record:
            assert isinstance(record["note"], str) and record["note"], where


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_alertmanager_fingerprints_are_the_label_sets(path: Path) -> None:
    for record in lines(path):
        if record["source"] == "alertmanager":
            for alert in record["payload"]["alerts"]:
                assert alert["fingerprint"] == labels_fingerprint(alert["labels"])


def test_public_set_labels_follow_the_rules_severity() -> None:
    for record in lines(PUBLIC):
        assert record["source"] == "alertmanager"
        (alert,) = record["payload"]["alerts"]
        (expected,) = record["expected"]
        severity = alert["labels"]["severity"]
        assert expected["severity"] == severity
        assert expected["page"] is (severity == "critical")
        assert record["note"]
        # The severity is told by its label alone: no other label value names one (alert names
        # and the rules' own text may).
        for name, value in alert["labels"].items():
            if name not in ("severity", "alertname"):
                assert not SEVERITY_WORD.search(value), (record["note"], name, value)


def test_public_counts_are_the_readmes() -> None:
    counts = Counter((e["team"], e["severity"]) for r in lines(PUBLIC) for e in r["expected"])
    readme = (SETS / "README.md").read_text(encoding="utf-8")
    for team in ("database", "network", "application"):
        c, w, i = (counts[(team, s)] for s in ("critical", "warning", "info"))
        assert f"| {team} | {c} | {w} | {i} | {c + w + i} | {c} |" in readme
    assert sum(counts.values()) == len(lines(PUBLIC)) == 594


def test_handwritten_set_mixes_sources_teams_and_pages() -> None:
    records = lines(HANDWRITTEN)
    assert 35 <= len(records) <= 60
    assert {r["source"] for r in records} == set(SOURCES)
    outcomes = Counter((e["team"], e["page"]) for r in records for e in r["expected"])
    assert all(outcomes[(team, page)] >= 3 for team in TEAMS for page in (True, False))
    alerts = [a for r in records for a in parse(r["source"], r["payload"]).alerts]
    assert sum("severity" not in a.labels for a in alerts) >= 3


# -- the builder ---------------------------------------------------------------------------------


def test_docs_record_the_pinned_source() -> None:
    for doc in ("README.md", "NOTICE.md"):
        text = (SETS / doc).read_text(encoding="utf-8")
        assert build_public.SOURCE_SHA256 in text, doc
        assert build_public.SOURCE_COMMIT in text, doc
        assert build_public.SOURCE_DATE in text, doc


def test_notice_gives_the_cc_by_attribution() -> None:
    notice = (SETS / "NOTICE.md").read_text(encoding="utf-8")
    for needed in (
        "Awesome Prometheus Alerts",
        "Samuel Berthe",
        "https://github.com/samber/awesome-prometheus-alerts",
        "CC BY 4.0",
        "https://creativecommons.org/licenses/by/4.0/",
        "Changes made",
    ):
        assert needed in notice


def test_public_set_is_the_builders_output_on_the_pinned_rules() -> None:
    raw = gzip.decompress(RULES.read_bytes())
    assert hashlib.sha256(raw).hexdigest() == build_public.SOURCE_SHA256
    rules = yaml.safe_load(raw)
    built = "".join(line + "\n" for line in build_public.build(rules))
    assert built == PUBLIC.read_text(encoding="utf-8")
    # The toy's training alerts (the rules outside the eval), as committed.
    training = "".join(line + "\n" for line in build_public.training(rules, TRAINING_VARIANTS))
    assert training == gzip.decompress(TRAINING.read_bytes()).decode("utf-8")


TRAINING = (
    Path(__file__).resolve().parents[2] / "deploy" / "models" / "scripts" / "data" / "catalogue.jsonl.gz"
)
TRAINING_VARIANTS = 8  # as built: build_public.py RULES OUT --training 8


def test_training_rules_are_the_ones_the_eval_leaves_out() -> None:
    rules = yaml.safe_load(RULES_SAMPLE)
    evaluated = {str(s.rule["name"]) for s in build_public.select(rules)}
    rest = {str(s.rule["name"]) for s in build_public.rest(rules)}
    walked = {str(r["name"]) for *_, r in build_public.walk(rules)}
    assert evaluated and rest and not evaluated & rest and evaluated | rest == walked
    lines = [json.loads(line) for line in build_public.training(rules, 3)]
    assert len(lines) == 3 * len(build_public.rest(rules))
    assert len({json.dumps(line["state"]) for line in lines}) == len(lines)  # the variants differ
    assert {line["state"]["alert"] for line in lines}.isdisjoint(
        gotemplate.liquid_alertname(n) for n in evaluated
    )


RULES_SAMPLE = r"""
groups:
  - name: Basic resource monitoring
    services:
      - name: Host and hardware
        exporters:
          - name: node-exporter
            slug: node-exporter
            rules:
              - name: Host out of memory
                description: Node memory is filling up (< 10% left)
                query: "(node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < .10)"
                severity: warning
                for: 2m
  - name: Databases
    services:
      - name: PostgreSQL
        exporters:
          - name: prometheus-community/postgres_exporter
            slug: postgres-exporter
            rules:
              - name: Postgresql down
                description: Postgresql instance is down
                query: "pg_up == 0"
                severity: critical
                for: 1m
                comments: |
                  1m delay allows a restart without triggering an alert.
  - name: Orchestrators
    services:
      - name: Kubernetes
        exporters:
          - name: kube-state-metrics
            slug: kubestate-exporter
            rules:
              - name: Kubernetes pod crash looping
                description: Pod {{ $labels.namespace }}/{{ $labels.pod }} is crash looping
                query: 'max_over_time(kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff"}[5m])
                  >= 1'
                severity: warning
                for: 2m
      - name: Etcd
        exporters:
          - name: Embedded exporter
            slug: embedded-exporter
            rules:
              - name: Etcd no Leader
                description: Etcd cluster have no leader
                query: "etcd_server_has_leader == 0"
                severity: critical
  - name: Network and security
    services:
      - name: CoreDNS
        exporters:
          - name: Embedded exporter
            slug: embedded-exporter
            rules:
              - name: CoreDNS SERVFAIL Error Rate Critical
                description: CoreDNS is returning SERVFAIL for {{ $value | humanizePercentage }} of DNS
                  responses, meaning a large share of client queries are failing to resolve.
                query: 'sum without (pod, instance, server, zone, view, rcode, plugin)
                  (rate(coredns_dns_responses_total{rcode="SERVFAIL"}[5m])) / sum without (pod, instance,
                  server, zone, view, rcode, plugin) (rate(coredns_dns_responses_total[5m])) > 0.03'
                severity: critical
                for: 10m
      - name: Hashicorp Vault
        exporters:
          - name: Embedded exporter
            slug: embedded-exporter
            rules:
              - name: Vault sealed
                description: "Vault instance is sealed on {{ $labels.instance }}"
                query: "vault_core_unsealed == 0"
                severity: critical
                for: 1m
      - name: Keycloak
        exporters:
          - name: aerogear/keycloak-metrics-spi
            slug: aerogear-keycloak-metrics-spi
            rules:
              - name: Keycloak high login failure rate
                description: "More than 5% of login attempts are failing in realm {{ $labels.realm }}
                  (current value: {{ $value | printf \"%.1f\" }}%)."
                query: '(sum by (realm) (rate(keycloak_failed_login_attempts_total[5m])) / (sum by (realm)
                  (rate(keycloak_logins_total[5m])) + sum by (realm)
                  (rate(keycloak_failed_login_attempts_total[5m])))) * 100 > 5 and (sum by (realm)
                  (rate(keycloak_logins_total[5m])) + sum by (realm)
                  (rate(keycloak_failed_login_attempts_total[5m]))) > 0'
                severity: warning
                for: 5m
                comments: |
                  Threshold of 5% is a rough default. Adjust based on your user base and expected error rates.
                  A spike in failed logins may indicate a brute-force attack or misconfigured client.
"""


def test_builder_rebuilds_the_committed_lines_of_quoted_rules() -> None:
    built = build_public.build(yaml.safe_load(RULES_SAMPLE))
    assert built == build_public.build(yaml.safe_load(RULES_SAMPLE))  # deterministic
    notes = [json.loads(line)["note"] for line in built]
    assert notes == [  # the host's memory and Vault are no team's: left out
        "Databases / PostgreSQL / postgres-exporter: Postgresql down",
        "Orchestrators / Kubernetes / kubestate-exporter: Kubernetes pod crash looping",
        "Orchestrators / Etcd / embedded-exporter: Etcd no Leader",
        "Network and security / CoreDNS / embedded-exporter: CoreDNS SERVFAIL Error Rate Critical",
        "Network and security / Keycloak / aerogear-keycloak-metrics-spi: Keycloak high login failure rate",
    ]
    committed = {json.loads(line)["note"]: line for line in PUBLIC.read_text(encoding="utf-8").splitlines()}
    for note, line in zip(notes, built, strict=True):
        assert line == committed[note], note
    teams = [json.loads(line)["expected"][0]["team"] for line in built]
    assert teams == ["database", "application", "database", "network", "application"]


def test_builder_renders_the_rules_templates() -> None:
    built = build_public.build(yaml.safe_load(RULES_SAMPLE))
    (down, crash, _, servfail, keycloak) = (json.loads(line) for line in built)
    alert = down["payload"]["alerts"][0]
    assert alert["labels"]["alertname"] == "PostgresqlDown"
    assert alert["annotations"]["summary"] == f"Postgresql down (instance {alert['labels']['instance']})"
    assert alert["annotations"]["description"].startswith(
        "Postgresql instance is down\n  VALUE = 0\n  LABELS = map["
    )
    assert down["expected"] == [{"page": True, "team": "database", "severity": "critical"}]
    labels = crash["payload"]["alerts"][0]["labels"]
    text = crash["payload"]["alerts"][0]["annotations"]["description"]
    assert text.startswith(f"Pod {labels['namespace']}/{labels['pod']} is crash looping\n")
    assert labels["reason"] == "CrashLoopBackOff"  # the selector's value
    text = servfail["payload"]["alerts"][0]["annotations"]["description"]
    share = re.search(r"SERVFAIL for ([\d.]+)% of", text)
    assert share is not None and float(share.group(1)) > 3  # on the firing side of `> 0.03`
    assert "{{" not in keycloak["payload"]["alerts"][0]["annotations"]["description"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.951, "0.951"),
        (97.5, "97.5"),
        (100.0, "100"),
        (123456.7, "123456.7"),
        (1e6, "1e+06"),
        (5e-05, "5e-05"),
    ],
)
def test_values_print_as_go_prints_a_float64(value: float, shown: str) -> None:
    assert go_value(value) == shown


def test_prometheus_template_functions() -> None:
    assert gotemplate.humanize(1234567.0) == "1.235M"
    assert gotemplate.humanize(0.0123) == "12.3m"
    assert gotemplate.humanize1024(2048.0) == "2ki"
    assert gotemplate.humanize_duration(93784.0) == "1d 2h 3m 4s"
    assert gotemplate.humanize_duration(0.25) == "250ms"
    assert gotemplate.render("{{ $value | humanizePercentage }}", {}, 0.352) == "35.2%"
    assert gotemplate.render(
        '{{ printf "%.2f" $value }} on {{$labels.instance}}', {"instance": "a"}, 1.0
    ) == ("1.00 on a")
