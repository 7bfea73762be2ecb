"""The gate's figures come from what each Locust run wrote once its users stopped; a run that
measured nothing is a GateError that says why, never a row of NaNs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadtest.gate import GateError, GatePhase, _final_figures

pytestmark = pytest.mark.unit

PHASE = GatePhase("latency", 1, 2)
GOOD = {"requests": 38, "failures": 1, "p50_ms": 41.0, "p95_ms": 60.0, "rps": 19.0, "exceptions": []}


def _written(tmp_path: Path, **changes: Any) -> Path:
    path = tmp_path / "latency_figures.json"
    path.write_text(json.dumps(GOOD | changes))
    return path


def test_the_figures_are_read_as_written(tmp_path: Path) -> None:
    assert _final_figures(_written(tmp_path), PHASE) == {
        "requests": 38, "failures": 1, "p50_ms": 41.0, "p95_ms": 60.0, "rps": 19.0,
    }  # fmt: skip


NOTHING = {"requests": 0, "failures": 0, "p50_ms": None, "p95_ms": None}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (NOTHING, "no request was answered in the latency phase (2 s)"),
        (
            {"exceptions": ["3x KeyError: 'page'"]},
            "Locust's users raised in the latency phase: 3x KeyError: 'page'",
        ),
    ],
)
def test_a_run_that_measured_nothing_is_a_gate_error(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(GateError) as raised:
        _final_figures(_written(tmp_path, **changes), PHASE)
    assert str(raised.value) == message


def test_a_run_that_wrote_no_figures_is_a_gate_error(tmp_path: Path) -> None:
    with pytest.raises(GateError, match="the latency phase's Locust run wrote no figures"):
        _final_figures(tmp_path / "latency_figures.json", PHASE)
