"""The restored start's L4 projection rests on the H200's measured phases: its data is the committed
report's column, phase for phase, and the generated page is current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deploy.cloud.start_budget import (
    _ARRIVAL_NAMES,
    RESTORED_ENGINE,
    restored_arrival,
    restored_phases,
    restored_total,
)
from deploy.runtime.settings import WEIGHTS_MODES
from scripts.gen_docs import PROJECTION_DOC, replace, restored

pytestmark = pytest.mark.unit

PHASES = Path(__file__).resolve().parents[3] / "docs" / "cold-start-h200" / "bytecode" / "phases.md"
RUN = "arms/04-baseline"  # the steady restored start: the sampler's graph in the restored cache


def _column() -> dict[str, float]:
    """Run 4's phases, as the report's analyzer wrote them."""
    lines = [line for line in PHASES.read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    at = next(i for i, c in enumerate(header) if c.startswith(RUN))
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    return {re.sub(r"\*", "", r[0]): float(r[at].strip("*")) for r in rows}


def test_the_h200_figures_are_the_reports_steady_start_and_add_up_to_its_ready() -> None:
    measured = _column()
    ready = measured.pop("spawn to ready")
    assert sum(r.h200_s for r in RESTORED_ENGINE) == pytest.approx(ready, abs=0.05)
    # Each measured phase is counted once: the data's figures are the report's, two of them sums.
    singles = {round(v, 1) for v in measured.values()}
    merged = [r for r in RESTORED_ENGINE if round(r.h200_s, 1) not in singles]
    assert [r.name for r in merged] == [
        "CUDA graphs: PIECEWISE and FULL",
        "engine core after capture, API server app, uvicorn",
    ]
    graphs = measured["CUDA graphs: PIECEWISE"] + measured["CUDA graphs: FULL"]
    assert merged[0].h200_s == pytest.approx(graphs)
    after = [
        k
        for k in measured
        if k.startswith(("engine core: after capture", "API server: app", "API server: uvicorn"))
    ]
    assert len(after) == 3 and merged[1].h200_s == pytest.approx(sum(measured[k] for k in after))


def test_every_mode_adds_the_container_and_the_weights_arrival_to_the_engine() -> None:
    assert all(r.low_x >= 1 and r.high_x >= r.low_x for r in RESTORED_ENGINE)
    engine_low = sum(r.h200_s * r.low_x for r in RESTORED_ENGINE)
    for mode in WEIGHTS_MODES:
        phases = restored_phases(mode)
        assert phases[0].name == "instance and container up"
        # Each arrival phase is named in the cold start's own list: a renamed one would drop out.
        assert [p.name for p in restored_arrival(mode)[1:]] == list(_ARRIVAL_NAMES[mode])
        low, high = restored_total(mode)
        assert low > engine_low + 6 and high > low
    # baked: the image streams the weights; the other modes' arrival has no image row
    assert any("image" in p.name for p in restored_phases("baked"))
    assert not any("image" in p.name for p in restored_phases("download"))


def test_the_projection_page_is_generated_from_the_data() -> None:
    text = PROJECTION_DOC.read_text()
    assert replace(text, "restored", restored()) == text
