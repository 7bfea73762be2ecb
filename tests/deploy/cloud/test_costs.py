"""One cost model (deploy/cloud/costs.py): its arithmetic on a hand-computed case, the idle line inside
every month, a router that its Watchdog keeps up, its inputs the module's and the gate profile's, and
docs/deploy.md's table and the prose's figures as the model makes them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from deploy.cloud.costs import CostModel, usd
from loadtest.gate import GateProfile
from scripts.gen_docs import DEPLOY_DOC, costs
from tests.helpers.terraform import TERRAFORM, hcl

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
# Round figures, so that each result below can be worked out by hand.
HAND: dict[str, Any] = {
    "hours_a_month": 100,
    "idle_window_s": 900,
    "prices": {
        "cloud_run_vcpu_s": 0.00001,
        "cloud_run_gib_s": 0.000002,
        "gcs_gb_month": 0.02,
        "registry_gb_month": 0.1,
        "cloud_build_min": 0.01,
        "prometheus_per_million": 0.1,
    },
    "router": {
        "vcpu": 1,
        "memory_gib": 0.5,
        "collector_vcpu": 1,
        "collector_memory_gib": 0.5,
        "uptime_check_s": 300,
        "watchdog_s": 60,
        "start_s": 0,
    },
    "metrics": {"scrape_s": 36, "series_per_instance": 10},  # 100 samples an hour per series
    "images": {"kept": 2, "base_gb": 10, "kit_gb": 1, "router_gb": 0.5},
    "storage": {"checkpoints_kept": 1},
    "deploy": {"build_min": (10, 20), "gate_extra_s": (0, 0)},
    "profile": "hand",
    "l4_hour": 2.0,
    "gate_s": 100,
    "decisions_per_s": 10,
    "checkpoint_gb": 10,
    "cold_start_s": (100, 300),
    "l4_vcpu": "8",
    "l4_memory": "32Gi",
}


def _hand(**router: float) -> CostModel:
    return CostModel.model_validate({**HAND, "router": {**HAND["router"], **router}})


def test_the_arithmetic_on_a_hand_computed_case() -> None:
    m = _hand()
    # 100 h x 3,600 s x (2 vCPU x 0.00001 + 1 GiB x 0.000002) = 360,000 x 0.000022
    router, checkpoint = 7.92, 1 * 10 * 0.02
    images = (10 + 2 * (10 + 1) + 2 * 0.5) * 0.1  # 33 GB
    metrics = 10 * 100 * 100 / 1e6 * 0.1  # 10 series x 100 h x 100 samples an hour
    idle = router + checkpoint + images + metrics
    assert m.idle().low == m.idle().high == pytest.approx(idle) == pytest.approx(11.43)
    # An alert every 10 min: inside the 15 min window, the L4 never scales down: 100 h x $2.
    every_10 = m.alerts_every(600)
    assert every_10.low == every_10.high == pytest.approx(idle + 200 + 0.01)
    # Hourly: 100 alerts x (100 or 300 s of start + 900 s up) = 27.8 or 33.3 h.
    hourly = m.alerts_every(3600)
    l4 = (100 * 1000 / 3600 * 2, 100 * 1200 / 3600 * 2)
    hourly_metrics = (10 * 100 * 1000 / 3600 * 100 / 1e6 * 0.1, 10 * 100 * 1200 / 3600 * 100 / 1e6 * 0.1)
    assert hourly.low == pytest.approx(idle + l4[0] + hourly_metrics[0])
    assert hourly.high == pytest.approx(idle + l4[1] + hourly_metrics[1])
    assert m.sustained().low == pytest.approx(idle + 200 + 0.01)
    # A deploy: 10-20 build minutes at $0.01; (start + 100 s of gate + 900 s idling out) of an L4.
    deploy = m.each_deploy()
    assert deploy.low == pytest.approx(0.1 + 1100 / 3600 * 2)
    assert deploy.high == pytest.approx(0.2 + 1300 / 3600 * 2)


def test_every_month_includes_the_idle_line_the_idle_row_shows() -> None:
    m = CostModel.load()
    idle, *others = m.scenarios()
    months = [s for s in others if s.per == "a month"]
    assert len(months) == 3
    for s in months:
        assert s.parts["idle"] == (idle.low, idle.high), s.name
        assert f"plus the idle line, {usd(idle.low)}" in s.arithmetic, s.name
        assert s.low >= idle.low + m.l4_hour  # at least an L4 hour on top


def test_a_router_with_no_instance_kept_costs_as_always_on_while_the_watchdog_reaches_it() -> None:
    m = CostModel.load()
    always = m.router_month(min_instances=1)
    assert m.router_month(min_instances=0, watchdog=True, uptime_check=False) == always
    assert m.router_month(min_instances=0, watchdog=False, uptime_check=True) == always  # every 5 min
    assert m.router_month(min_instances=0, watchdog=False, uptime_check=False) == 0
    assert m.idle(min_instances=0).low == m.idle().low
    # Wakes further apart than the window: one start plus the window per wake.
    sparse = _hand(watchdog_s=3600, start_s=0)
    assert sparse.router_up(min_instances=0, uptime_check=False) == pytest.approx(900 / 3600)


def test_the_inputs_are_the_modules_and_the_gate_profiles() -> None:
    m = CostModel.load()
    variables = {k: v for block in hcl(TERRAFORM / "variables.tf")["variable"] for k, v in block.items()}
    (collector,) = [b["collector"] for b in hcl(TERRAFORM / "main.tf")["locals"] if "collector" in b]
    assert m.router.vcpu == float(variables["router_cpu"]["default"])
    assert m.router.memory_gib * 1024 == int(variables["router_memory"]["default"].removesuffix("Mi"))
    assert (m.router.collector_vcpu, m.router.collector_memory_gib * 1024) == (
        collector["cpu"],
        collector["memory_mib"],
    )
    assert m.images.kept == variables["image_retention_count"]["default"]
    assert m.l4_hour == GateProfile.load("l4").hourly_price_usd
    monitoring = hcl(TERRAFORM / "monitoring.tf")["resource"]
    (uptime,) = [
        r["google_monitoring_uptime_check_config"]["router"]
        for r in monitoring
        if "router" in r.get("google_monitoring_uptime_check_config", {})
    ]
    assert uptime["period"] == f"{m.router.uptime_check_s:.0f}s"
    route = (ROOT / "docs" / "alert-routing.md").read_text()
    watchdog = re.search(r"alertname=\"Watchdog\"'\]\n(?:.*\n)*?\s+repeat_interval: (\d+)m", route)
    assert watchdog and int(watchdog.group(1)) * 60 == m.router.watchdog_s


def test_the_docs_table_is_what_the_model_makes() -> None:
    text = DEPLOY_DOC.read_text()
    section = text.split("<!-- costs:start -->\n", 1)[1].split("\n<!-- costs:end -->", 1)[0]
    assert section == costs(), "stale: run `make docs`"
    assert "not quotes" in section and "idle: no request, no alert" in section


def test_the_figures_quoted_in_prose_are_the_models() -> None:
    """The few figures written by hand outside the table (help texts, variable descriptions) round
    the model's."""
    m = CostModel.load()
    quoted = {
        f"${m.hours_a_month * m.l4_hour:,.0f} a month": [
            "terraform/README.md",
            "terraform/monitoring.tf",
            "deploy/cloud/variables.py",
            "deploy/cloud/config.py",
        ],
        f"${m.router_month():,.0f} a month": [
            "terraform/variables.tf",
            "deploy/cloud/variables.py",
            "docs/alert-routing.md",
        ],
        f"${m.collector_month():,.0f} a month": ["terraform/README.md"],
    }
    for figure, paths in quoted.items():
        for path in paths:
            assert figure in (ROOT / path).read_text(), f"{path} does not say {figure}"
