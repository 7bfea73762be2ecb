"""Regenerate the generated parts of the docs; `--check` fails when one is stale.

- docs/operations.md, settings: from the settings sections, each owned by the room of the process
  that reads it (listed here and nowhere else; an inherited field appears once, under the section
  declaring it);
- docs/deploy.md, cold start: from deploy/cloud/start_budget.py;
- docs/cold-start-h200/l4-projection.md, a restored start on an L4: from deploy/cloud/start_budget.py;
- docs/deploy.md, costs: from deploy/cloud/costs.py (its prices and assumptions in costs.toml);
- terraform/README.md, inputs and outputs: from terraform/variables.tf and outputs.tf;
- monitoring/grafana/dgemma.json, whole: the PromQL panels of monitoring/dashboards.yaml, the panels
  Terraform makes Cloud Monitoring dashboards of;
- monitoring/prometheus/dgemma.rules.yml, whole, and docs/operations.md, alerts: from
  monitoring/alerts.yaml, the alerts Terraform makes Cloud Monitoring policies of.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

from app.alerts.settings import AlertRouterSettings
from app.core.config import KitSettings, env_names
from app.gateway.settings import GatewaySettings
from deploy.runtime.settings import EngineSettings, SupervisorSettings
from evals.settings import EvalSettings
from loadtest.settings import LoadtestSettings

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_DOC = ROOT / "docs" / "operations.md"
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
PROJECTION_DOC = ROOT / "docs" / "cold-start-h200" / "l4-projection.md"
TERRAFORM_README = ROOT / "terraform" / "README.md"
DASHBOARDS = ROOT / "monitoring" / "dashboards.yaml"
GRAFANA = ROOT / "monitoring" / "grafana" / "dgemma.json"
ALERTS = ROOT / "monitoring" / "alerts.yaml"
RULES = ROOT / "monitoring" / "prometheus" / "dgemma.rules.yml"
# The Prometheus rules' ${gateway} and ${router}: the jobs to scrape the services as.
PROMETHEUS_SERVICES = {"gateway": 'job="dgemma-gateway"', "router": 'job="dgemma-router"'}
# dashboards.yaml's units (Cloud Monitoring's) as Grafana's.
GRAFANA_UNITS = {"s": "s", "ms": "ms", "1/s": "ops", "1/min": "opm", "1": "short", "10^2.%": "percentunit"}
# (heading, section, the file that declares it, who reads it)
SECTIONS: list[tuple[str, type[KitSettings], str, str]] = [
    ("Every process", KitSettings, "app/core/config.py", "every entry point"),
    ("Gateway", GatewaySettings, "app/gateway/settings.py", "`dgemma serve` (started by the supervisor)"),
    ("Engine", EngineSettings, "deploy/runtime/settings.py", "the supervisor, `fit`, `model`, `quantize`"),
    ("Supervisor", SupervisorSettings, "deploy/runtime/settings.py", "`dgemma run`, `dgemma dev`"),
    ("Load-test gate", LoadtestSettings, "loadtest/settings.py", "`dgemma loadtest`"),
    ("Eval", EvalSettings, "evals/settings.py", "`dgemma eval`"),
    ("Alert router", AlertRouterSettings, "app/alerts/settings.py", "`dgemma alerts serve`, `replay`"),
]


def declared(section: type[KitSettings]) -> list[str]:
    """Fields a section declares itself (or takes from a base that is not a listed section)."""
    listed = {s for _, s, _, _ in SECTIONS if s is not section}
    inherited = {name for base in section.__mro__[1:] if base in listed for name in base.model_fields}
    return [name for name in section.model_fields if name not in inherited]


def tables() -> str:
    out = []
    for heading, section, path, reader in SECTIONS:
        names = env_names(section)
        rows = [
            f"**{heading}** (`{section.__name__}`, {path}; read by {reader})",
            "",
            "| env var | default | what it does |",
            "| --- | --- | --- |",
        ]
        for name in declared(section):
            f = section.model_fields[name]
            env = " / ".join(f"`{n}`" for n in names[name])
            default = f.get_default(call_default_factory=True)
            if isinstance(default, bool):
                default = str(default).lower()  # as the env var is written
            elif isinstance(default, Path) and default.is_relative_to(ROOT):
                default = default.relative_to(ROOT)  # the checkout's path, not this machine's
            shown = "(none)" if default in (None, [], "") else f"`{default}`"
            desc = " ".join((f.description or "").split()).replace("|", "\\|")
            rows.append(f"| {env} | {shown} | {desc} |")
        out.append("\n".join(rows))
    return "\n\n".join(out)


def coldstart() -> str:
    from deploy.cloud.start_budget import phases, total
    from deploy.runtime.settings import WEIGHTS_MODES

    rows = ["| weights mode | phase | seconds | kind | how |", "| --- | --- | ---: | --- | --- |"]
    for mode in WEIGHTS_MODES:
        for p in phases(mode):
            rows.append(f"| {mode} | {p.name} | {p.low_s:.0f}-{p.high_s:.0f} | {p.kind} | {p.how} |")
        low, high = total(mode)
        rows.append(f"| **{mode}** | **total** | **{low:.0f}-{high:.0f}** | projected | |")
    return "\n".join(rows)


def restored() -> str:
    from deploy.cloud.start_budget import (
        RESTORED_ENGINE,
        restored_arrival,
        restored_engine,
        restored_total,
        span,
    )
    from deploy.runtime.settings import WEIGHTS_MODES

    rows = [
        "The engine, any mode (from the spawn of `dgemma run` to ready, the weights in memory):",
        "",
        "| phase | H200, measured | factor | L4, projected | why the factor |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for r, p in zip(RESTORED_ENGINE, restored_engine(), strict=True):
        factor, l4 = f"x{r.low_x:g}-{r.high_x:g}", f"{p.low_s:.1f}-{p.high_s:.1f}"
        rows.append(f"| {r.name} | {r.h200_s:.1f} | {factor} | {l4} | {r.why} |")
    h200 = sum(r.h200_s for r in RESTORED_ENGINE)
    low, high = span(restored_engine())
    rows += [f"| **the engine** | **{h200:.1f}** | | **{low:.0f}-{high:.0f}** | |", ""]
    rows += [
        "Per weights mode (seconds):",
        "",
        "| weights mode | phase | seconds | kind | how |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for mode in WEIGHTS_MODES:
        for p in restored_arrival(mode):
            rows.append(f"| {mode} | {p.name} | {p.low_s:.0f}-{p.high_s:.0f} | {p.kind} | {p.how} |")
        rows.append(f"| {mode} | the engine, above | {low:.0f}-{high:.0f} | projected | |")
        total_low, total_high = restored_total(mode)
        rows.append(
            f"| **{mode}** | **a restored start** | **{total_low:.0f}-{total_high:.0f}** | projected | |"
        )
    return "\n".join(rows)


def costs() -> str:
    from deploy.cloud.costs import CostModel

    model = CostModel.load()

    def fill(text: str, indent: str = "") -> str:
        return textwrap.fill(
            text, 100, initial_indent=indent, subsequent_indent=" " * len(indent), break_on_hyphens=False
        )

    rows = [
        fill(model.preamble()),
        "",
        "| scenario | what runs | arithmetic | a month |",
        "| --- | --- | --- | ---: |",
    ]
    rows += [f"| {s.name} | {s.runs} | {s.arithmetic} | {s.figure()} |" for s in model.scenarios()]
    return "\n".join([*rows, "", *(fill(line, "- ") for line in model.assumptions())])


def terraform_tables() -> str:
    import hcl2
    from hcl2 import SerializationOptions

    opts = SerializationOptions(strip_string_quotes=True, explicit_blocks=False, with_comments=False)

    def blocks(name: str, kind: str) -> dict[str, dict[str, object]]:
        with (ROOT / "terraform" / name).open() as f:
            parsed = hcl2.load(f, serialization_options=opts).get(kind, [])
        return {k: v for block in parsed for k, v in block.items()}

    rows = ["| input | type | default | description |", "| --- | --- | --- | --- |"]
    for name, v in blocks("variables.tf", "variable").items():
        kind = str(v.get("type", "")).removeprefix("${").removesuffix("}")
        default = "required" if "default" not in v else f"`{json.dumps(v['default'])}`"
        rows.append(f"| `{name}` | `{kind}` | {default} | {v.get('description', '')} |")
    rows += ["", "| output | description |", "| --- | --- |"]
    for name, o in blocks("outputs.tf", "output").items():
        rows.append(f"| `{name}` | {o.get('description', '')} |")
    return "\n".join(rows)


def grafana() -> str:
    """One Grafana dashboard, a row per service, over a Prometheus data source picked at import (the
    Cloud Run panels have no Prometheus series: Cloud Monitoring only)."""
    source = {"type": "prometheus", "uid": "${datasource}"}
    panels: list[dict[str, object]] = []
    y = 0
    for service in yaml.safe_load(DASHBOARDS.read_text()).values():
        panels.append({
            "type": "row", "title": service["title"], "id": len(panels) + 1, "collapsed": False,
            "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": [],
        })  # fmt: skip
        y += 1
        promql = [p for p in service["panels"] if "promql" in p]
        for i, p in enumerate(promql):
            panels.append({
                "type": "timeseries", "title": p["title"], "id": len(panels) + 1, "datasource": source,
                "gridPos": {"x": (i % 2) * 12, "y": y + (i // 2) * 8, "w": 12, "h": 8},
                "fieldConfig": {"defaults": {"unit": GRAFANA_UNITS[p["unit"]]}, "overrides": []},
                "targets": [
                    {"refId": chr(ord("A") + j), "expr": q, "datasource": source}
                    for j, q in enumerate(p["promql"])
                ],
            })  # fmt: skip
        y += (len(promql) + 1) // 2 * 8
    dashboard = {
        "title": "DiffusionGemma kit", "uid": "dgemma-kit", "tags": ["dgemma"], "editable": True,
        "schemaVersion": 39, "refresh": "1m", "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"}
        ]},
        "panels": panels,
    }  # fmt: skip
    return json.dumps(dashboard, indent=2) + "\n"


SLOT = re.compile(r"\$\{(\w+)\}")
RULES_HEADER = """\
# Prometheus recording and alerting rules for the kit's own metrics (the gateway's and the alert
# router's /metrics), for teams that run Prometheus. Scrape the gateway as job "dgemma-gateway" and
# the router as job "dgemma-router". Tested with `promtool test rules dgemma.rules.test.yml`
# (tests/monitoring); every metric and label named here is checked against the real processes.
#
# Generated from monitoring/alerts.yaml by `make docs` (scripts/gen_docs.py): edit that file, the one
# source of these rules and of the Cloud Monitoring policies Terraform makes (terraform/main.tf).
#
# SLOs of the decision service (POST /v1/systemone), over {days} days: availability {availability} %
# (no 5xx), latency {latency} % within {threshold_s} s. Burn-rate alerts use the multiwindow pairs of
# Google's SRE workbook: {pairs}.
"""


def fill(text: str, slots: dict[str, str], where: str) -> str:
    """`text` with each ${NAME} of monitoring/alerts.yaml replaced by its slot's value."""

    def slot(m: re.Match[str]) -> str:
        if m.group(1) not in slots:
            raise SystemExit(
                f"monitoring/alerts.yaml, {where}: no slot ${{{m.group(1)}}} (has {sorted(slots)})"
            )
        return slots[m.group(1)]

    return SLOT.sub(slot, text)


def prom_duration(value_s: int) -> str:
    """Whole seconds as Prometheus writes a window: 1h, 30m, 45s."""
    for unit, size in (("h", 3600), ("m", 60)):
        if value_s % size == 0:
            return f"{value_s // size}{unit}"
    return f"{value_s}s"


def human(value_s: int) -> str:
    """Whole seconds as the docs write them: 1 h, 30 min."""
    return f"{value_s // 3600} h" if value_s % 3600 == 0 else f"{value_s // 60} min"


def number(value: float) -> str:
    """A number as the source means it (1 - 0.995 is 0.005, not 0.0050000000000000044)."""
    return f"{value:.10g}"


def alert_groups() -> dict[str, dict[str, dict[str, Any]]]:
    groups: dict[str, dict[str, dict[str, Any]]] = yaml.safe_load(ALERTS.read_text())["groups"]
    return groups


def prometheus_rules() -> str:
    """The Prometheus rules of monitoring/alerts.yaml: the SLOs' recording rules, then each group's
    alerts (an SLO's alert: its multiwindow burn over those recording rules)."""
    source = yaml.safe_load(ALERTS.read_text())
    slos, burn = source["slos"], source["slos"]["burn"]
    windows = sorted({w for pair in burn for w in (pair["short_s"], pair["long_s"])})
    records: list[dict[str, object]] = []
    for name in ("availability", "latency"):
        slo = slos[name]
        for window in windows:
            slots = {**PROMETHEUS_SERVICES, "window": prom_duration(window)}
            slots |= {k: number(v) for k, v in slo.items() if k == "threshold_s"}
            expr = fill(slo["bad_ratio"], slots, f"slos.{name}")
            records.append({"record": f"{slo['record']}:rate{prom_duration(window)}", "expr": expr})
    for record, expr in source["records"].items():
        records.append({"record": record, "expr": fill(expr, PROMETHEUS_SERVICES, record)})
    groups: list[dict[str, object]] = [{"name": "dgemma-slo", "interval": "30s", "rules": records}]
    for group, alerts in source["groups"].items():
        rules: list[dict[str, object]] = []
        for name, a in alerts.items():
            slots = {**PROMETHEUS_SERVICES, **{k: number(v) for k, v in dict(a.get("params", {})).items()}}
            if "slo" in a:
                slo = slos[a["slo"]]
                budget = number(1 - slo["goal"])
                rate, pairs = slo["record"] + ":rate", []
                for p in burn:
                    over = f"> {number(p['factor'])} * {budget}"
                    long, short = prom_duration(p["long_s"]), prom_duration(p["short_s"])
                    pairs.append(f"({rate}{long} {over} and {rate}{short} {over})")
                expr = " or ".join(pairs)
            else:
                expr = fill(str(a["expr"]), slots, name)
            rule: dict[str, object] = {"alert": name, "expr": expr}
            if "for" in a:
                rule["for"] = a["for"]
            rule["labels"] = {"severity": a["severity"]}
            rule["annotations"] = {
                k: fill(str(a[k]), slots, f"{name}.{k}")
                for k in ("summary", "description", "runbook")
                if k in a
            }
            rules.append(rule)
        groups.append({"name": group, "rules": rules})
    header = RULES_HEADER.format(
        days=slos["days"],
        availability=number(slos["availability"]["goal"] * 100),
        latency=number(slos["latency"]["goal"] * 100),
        threshold_s=number(slos["latency"]["threshold_s"]),
        pairs=", ".join(
            f"{number(p['factor'])}x over {human(p['long_s'])} and {human(p['short_s'])}" for p in burn
        ),
    )
    body: str = yaml.safe_dump({"groups": groups}, sort_keys=False, width=10**6, allow_unicode=True)
    return header + body


def alerts_table() -> str:
    """docs/operations.md's table of the alerts: where each runs and what to do."""
    rows = ["| alert | severity | for | Cloud Monitoring | what to do |", "| --- | --- | --- | --- | --- |"]
    for alerts in alert_groups().values():
        for name, a in alerts.items():
            params = {k: number(v) for k, v in dict(a.get("params", {})).items()}
            if a.get("only") == "prometheus":
                cloud = "none (Prometheus only)"
            elif "slo" in a:
                cloud = f'`slo_burn["{a["slo"]}"]`'
            else:
                cloud = f'`kit["{a["key"]}"]`'
            if a.get("around_router"):
                cloud += ", around the router"
            if "switch" in a:
                cloud += f", off with `{a['switch']} = false`"
            runbook = fill(
                str(a.get("runbook", a.get("description", ""))), {**PROMETHEUS_SERVICES, **params}, name
            )
            rows.append(f"| `{name}` | {a['severity']} | {a.get('for', 'at once')} | {cloud} | {runbook} |")
    return "\n".join(rows)


def replace(text: str, marker: str, content: str) -> str:
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"the {start} ... {end} markers are missing")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{content}\n{end}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    generated = {
        SETTINGS_DOC: [("settings", tables()), ("alerts", alerts_table())],
        DEPLOY_DOC: [("coldstart", coldstart()), ("costs", costs())],
        PROJECTION_DOC: [("restored", restored())],
        TERRAFORM_README: [("terraform", terraform_tables())],
    }
    stale = []
    for path, parts in generated.items():
        text = path.read_text()
        new = text
        for marker, content in parts:
            new = replace(new, marker, content)
        if new != text:
            stale.append(path.name)
            if not args.check:
                path.write_text(new)
    # Whole generated files.
    for path, content in {GRAFANA: grafana(), RULES: prometheus_rules()}.items():
        if not path.exists() or path.read_text() != content:
            stale.append(path.name)
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
    if args.check and stale:
        print(f"stale generated docs in {', '.join(stale)}: run `make docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
