"""Regenerate the generated parts of the docs; `--check` fails when one is stale.

- docs/operations.md, settings: from the settings sections, each owned by the room of the process
  that reads it (listed here and nowhere else; an inherited field appears once, under the section
  declaring it);
- docs/deploy.md, cold start: from deploy/cloud/coldstart.py;
- docs/deploy.md, costs: from deploy/cloud/costs.py (its prices and assumptions in costs.toml);
- terraform/README.md, inputs and outputs: from terraform/variables.tf and outputs.tf;
- monitoring/grafana/dgemma.json, whole: the PromQL panels of terraform/dashboards.yaml, the panels
  Terraform makes Cloud Monitoring dashboards of.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

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
TERRAFORM_README = ROOT / "terraform" / "README.md"
DASHBOARDS = ROOT / "terraform" / "dashboards.yaml"
GRAFANA = ROOT / "monitoring" / "grafana" / "dgemma.json"
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
    from deploy.cloud.coldstart import phases, total
    from deploy.runtime.settings import WEIGHTS_MODES

    rows = ["| weights mode | phase | seconds | kind | how |", "| --- | --- | ---: | --- | --- |"]
    for mode in WEIGHTS_MODES:
        for p in phases(mode):
            rows.append(f"| {mode} | {p.name} | {p.low_s:.0f}-{p.high_s:.0f} | {p.kind} | {p.how} |")
        low, high = total(mode)
        rows.append(f"| **{mode}** | **total** | **{low:.0f}-{high:.0f}** | projected | |")
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
        SETTINGS_DOC: [("settings", tables())],
        DEPLOY_DOC: [("coldstart", coldstart()), ("costs", costs())],
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
    for path, content in {GRAFANA: grafana()}.items():
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
