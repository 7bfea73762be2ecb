"""The cold-start accounting's tooling on CPU: the start options of devtools/lab/coldstart.py, and its
analyzer on a cut of two H200 starts (tests/data/cold-start/: one whole, one with py-spy's first
seconds), giving the summary and timeline it gave when the cut was made."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.core.config import ConfigError
from devtools.lab import coldstart_analyze
from devtools.lab.coldstart import parse_start

pytestmark = pytest.mark.unit

CUT = Path(__file__).resolve().parents[3] / "tests" / "data" / "cold-start"


def test_a_start_takes_its_options() -> None:
    s = parse_start("restored:debug,pyspy=50,VLLM_WORKER_MULTIPROC_METHOD=fork,timeout=300")
    assert s.name == "restored" and s.pyspy_hz == 50 and s.timeout_s == 300
    assert s.env == {
        "VLLM_LOGGING_LEVEL": "DEBUG", "DGEMMA_LOG_LEVEL": "DEBUG", "VLLM_WORKER_MULTIPROC_METHOD": "fork"
    }  # fmt: skip
    assert parse_start("cold").env == {}
    for bad, why in (
        ("restored:pyspy=fast", "pyspy_hz: Input should be a valid integer"),
        ("re stored", "name: a name of letters"),
        (":debug", "name: a name of letters"),
        ("x:lowercase=1", "unknown option 'lowercase=1'"),
        ("x:timeout=0", "timeout_s: Input should be greater than 0"),
        ("x:pyspy=-1", "pyspy_hz: Input should be greater than or equal to 0"),
    ):
        with pytest.raises(ConfigError, match=f"^--start '{bad}': {why}"):
            parse_start(bad)


def test_the_analyzer_makes_the_summary_and_timeline_of_two_starts(tmp_path: Path) -> None:
    copy = tmp_path / "report"
    shutil.copytree(CUT / "starts", copy / "starts")
    assert coldstart_analyze.main([str(copy)]) == 0
    assert (copy / "summary.md").read_text() == (CUT / "summary.md").read_text()
    assert sorted(p.name for p in copy.glob("timeline-*.txt")) == ["timeline-11.txt"]
    assert (copy / "timeline-11.txt").read_text() == (CUT / "timeline-11.txt").read_text()
    summary = (copy / "summary.md").read_text()
    assert "05-restored-fork" in summary and "11-restored-fork-pyspy" in summary
