"""Build `evals/alerts/awesome-prometheus-alerts.jsonl` from samber/awesome-prometheus-alerts.

    .venv/bin/python evals/alerts/build_public.py RULES_YML OUT_JSONL

RULES_YML is `_data/rules.yml` of https://github.com/samber/awesome-prometheus-alerts (CC BY 4.0;
the pinned commit and the file's digest are below and in evals/alerts/NOTICE.md). Each rule of a
category that maps onto one of the default policy's teams becomes one Alertmanager webhook v4
delivery with one firing alert, shaped as tests/data/alerts/alertmanager_firing.json; the line's
`expected` is `{page: severity == "critical", team, severity}`.

The alert is the one the project's published rule (`dist/template.yml`) would fire: `alertname` is
the rule name CamelCased as Liquid does it, `summary` is `<name> (instance <instance>)` and
`description` is the rule's description, then `VALUE = ...` and `LABELS = ...`, with the Go
templates rendered from synthetic label values and a value on the firing side of the rule's
threshold. The synthetic values come from a random generator seeded by the rule's place in the
source (category, service, exporter, name): a rule's line does not depend on which other rules are
in the file, so a subset of the rules builds the same lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import random
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import yaml

from app.alerts.formats import from_alertmanager
from app.alerts.records import labels_fingerprint
from evals.alerts.gofmt import go_labels, go_value
from evals.alerts.public.gotemplate import liquid_alertname, render
from evals.alerts.public.labels import SEVERITY_WORDS, synthetic_labels
from evals.alerts.public.promql import firing_value

# The source this file's committed output was built from.
SOURCE_REPO = "https://github.com/samber/awesome-prometheus-alerts"
SOURCE_COMMIT = "a8533189af0246de5e21a6d8d25bd37816894f07"
SOURCE_DATE = "2026-08-01"
SOURCE_SHA256 = "8c7ca4b6506d186d3e92c3083e87f7f36877710648c539e1a000e7550b82fc30"  # _data/rules.yml

SEED = "dgemma-alerts-eval-1"
EPOCH = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)  # startsAt falls in the 14 days after this
WINDOW_S = 14 * 24 * 3600

Team = str

# -- which rules, which team -------------------------------------------------------------------

# Category (the rule file's group) -> team. A category absent here is left out, except for the
# services listed in SERVICE_TEAMS; a service mapped to None is left out of its category.
GROUP_TEAMS: dict[str, Team] = {
    "Databases": "database",
    "Proxies, load balancers and service meshes": "network",
    "Network and security": "network",
    "Runtimes": "application",
    "Orchestrators": "application",
    "Message brokers": "application",
}
SERVICE_TEAMS: dict[tuple[str, str], Team | None] = {
    # A replicated key-value database: its rules are leader, quorum, WAL fsync, commit latency
    # and database size, the database team's replication and disk.
    ("Orchestrators", "Etcd"): "database",
    # Cloud infrastructure (hypervisors, Nova/Neutron/Cinder, tenant quotas): no team's.
    ("Orchestrators", "OpenStack"): None,
    # A secrets store (sealed, raft, token hygiene): no team's.
    ("Network and security", "Hashicorp Vault"): None,
    # A telephony switch (sessions, up): no team's.
    ("Network and security", "Freeswitch"): None,
    # An identity service of the applications: login, token and registration error rates, latency.
    ("Network and security", "Keycloak"): "application",
    # Endpoint probes: reachability, HTTP status, probe latency, TLS certificate expiry.
    ("Basic resource monitoring", "Blackbox"): "network",
    # The application containers (killed, absent, unhealthy, throttled, memory).
    ("Basic resource monitoring", "Docker containers"): "application",
    # GitOps deployment state of the application services (sync failed, unhealthy app).
    ("CI/CD", "ArgoCD"): "application",
    ("CI/CD", "FluxCD"): "application",
    # An application service (an LLM gateway): failed requests, latency, spend.
    ("Other", "LiteLLM"): "application",
}


def team_of(group: str, service: str) -> Team | None:
    if (group, service) in SERVICE_TEAMS:
        return SERVICE_TEAMS[(group, service)]
    return GROUP_TEAMS.get(group)


# -- deliveries --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selected:
    group: str
    service: str
    exporter: str
    rule: Mapping[str, Any]
    team: Team | None  # None: a rule outside the eval's categories (a training rule, `rest`)
    occurrence: int  # 0 unless the same (group, service, exporter, name) came before


def walk(rules: Mapping[str, Any]) -> Iterator[tuple[str, str, str, Mapping[str, Any]]]:
    for group in rules["groups"]:
        for service in group["services"]:
            for exporter in service["exporters"]:
                for rule in exporter.get("rules") or ():
                    yield group["name"], service["name"], exporter["slug"], rule


def select(rules: Mapping[str, Any]) -> list[Selected]:
    seen: dict[tuple[str, str, str, str], int] = {}
    out: list[Selected] = []
    for group, service, exporter, rule in walk(rules):
        team = team_of(group, service)
        if team is None:
            continue
        key = (group, service, exporter, str(rule["name"]))
        seen[key] = seen.get(key, -1) + 1
        out.append(Selected(group, service, exporter, rule, team, seen[key]))
    return out


def rest(rules: Mapping[str, Any]) -> list[Selected]:
    """The rules `select` leaves out (categories of no default team), less any whose name or
    description is an eval rule's: the toy's training rules, never an eval line."""
    chosen = select(rules)
    names = {liquid_alertname(str(s.rule["name"])).lower() for s in chosen}
    texts = {_plain(str(s.rule["description"])) for s in chosen}
    seen: dict[tuple[str, str, str, str], int] = {}
    out: list[Selected] = []
    for group, service, exporter, rule in walk(rules):
        if team_of(group, service) is not None:
            continue
        if liquid_alertname(str(rule["name"])).lower() in names or _plain(str(rule["description"])) in texts:
            continue
        key = (group, service, exporter, str(rule["name"]))
        seen[key] = seen.get(key, -1) + 1
        out.append(Selected(group, service, exporter, rule, None, seen[key]))
    return out


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _starts_at(rng: random.Random) -> str:
    t = EPOCH + dt.timedelta(seconds=rng.randrange(WINDOW_S))
    nanos = f"{rng.randrange(10**9):09d}".rstrip("0")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{nanos}" if nanos else "") + "Z"


def _quote_label(value: str) -> str:
    return json.dumps(value)  # Go's %q for the printable text of alert names


def delivery(s: Selected, variant: int = 0) -> dict[str, Any]:
    """The rule's delivery; another `variant` draws other label values, value and time."""
    rule = s.rule
    place = "\x00".join((SEED, s.group, s.service, s.exporter, str(rule["name"]), str(s.occurrence)))
    if variant:
        place += f"\x00{variant}"
    rng = random.Random(place)
    severity = str(rule["severity"])
    series = synthetic_labels(rng, s.service, rule)
    for name, text in series.items():  # the severity is told by the `severity` label only
        if SEVERITY_WORDS.search(text):
            raise ValueError(f"{s.service}: {rule['name']}: label {name}={text!r} names a severity")
    value = firing_value(rng, str(rule["name"]), str(rule["query"]))
    alertname = liquid_alertname(str(rule["name"]))
    labels = dict(sorted({**series, "alertname": alertname, "severity": severity}.items()))
    description = render(str(rule["description"]), series, value)
    annotations = {
        "description": f"{description}\n  VALUE = {go_value(value)}\n  LABELS = {go_labels(series)}",
        "summary": f"{rule['name']} (instance {series['instance']})",
    }
    prometheus = rng.choice(("http://prometheus:9090", "http://prometheus-0.monitoring:9090"))
    alert = {
        "status": "firing",
        "labels": labels,
        "annotations": annotations,
        "startsAt": _starts_at(rng),
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": f"{prometheus}/graph?g0.expr={quote_plus(str(rule['query']))}&g0.tab=1",
        "fingerprint": labels_fingerprint(labels),
    }
    payload = {
        "receiver": "router",
        "status": "firing",
        "alerts": [alert],
        "groupLabels": {"alertname": alertname},
        "commonLabels": labels,
        "commonAnnotations": annotations,
        "externalURL": "http://alertmanager:9093",
        "version": "4",
        "groupKey": "{}:{alertname=" + _quote_label(alertname) + "}",
        "truncatedAlerts": 0,
    }
    expected = [{"page": severity == "critical", "team": s.team, "severity": severity}]
    note = f"{s.group} / {s.service} / {s.exporter}: {rule['name']}"
    return {"source": "alertmanager", "payload": payload, "expected": expected, "note": note}


def build(rules: Mapping[str, Any]) -> list[str]:
    """The JSON lines, in the source's order."""
    lines = []
    for s in select(rules):
        lines.append(json.dumps(delivery(s), ensure_ascii=False, separators=(",", ":")))
    return lines


def training(rules: Mapping[str, Any], variants: int) -> list[str]:
    """JSON lines of the `rest` rules' alerts, `variants` renderings each, as the toy trains on
    them (deploy/models/scripts/alert_corpus/): the state the router builds from the delivery
    (`Alert.state()`), the rule's severity, and the split (a tenth of the rules, by name, is dev)."""
    lines = []
    for s in rest(rules):
        name = str(s.rule["name"])
        digest = hashlib.sha256(f"{s.service}\x00{name}".encode()).digest()
        split = "dev" if digest[0] % 10 == 0 else "train"
        for v in range(variants):
            (alert,) = from_alertmanager(delivery(s, v)["payload"]).alerts
            item = {
                "split": split,
                "rule": f"{s.group} / {s.service}: {name}",
                "severity": str(s.rule["severity"]),
            }
            lines.append(
                json.dumps({**item, "state": alert.state()}, ensure_ascii=False, separators=(",", ":"))
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("rules", type=Path, help="_data/rules.yml of samber/awesome-prometheus-alerts")
    parser.add_argument("out", type=Path, help="the JSON Lines file to write (gzipped with --training)")
    parser.add_argument(
        "--training", type=int, metavar="VARIANTS",
        help="write instead the toy's training alerts: the rules outside the eval, VARIANTS renderings each",
    )  # fmt: skip
    args = parser.parse_args(argv)
    raw = args.rules.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SOURCE_SHA256:
        print(f"note: {args.rules} is not the pinned rules file (sha256 {digest})", file=sys.stderr)
    rules = yaml.safe_load(raw.decode("utf-8"))
    if args.training:
        lines = training(rules, args.training)
        text = "".join(line + "\n" for line in lines).encode("utf-8")
        args.out.write_bytes(gzip.compress(text, mtime=0))  # mtime 0: the same bytes on every build
    else:
        lines = build(rules)
        args.out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"{len(lines)} deliveries -> {args.out} (rules sha256 {digest})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
