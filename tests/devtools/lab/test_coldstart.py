"""The cold-start accounting's tooling on CPU: the start options of devtools/lab/coldstart.py, and the
committed H200 report (docs/cold-start-h200) as its analyzer makes it from the committed raw starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.core.config import ConfigError
from devtools.lab import coldstart_analyze
from devtools.lab.coldstart import parse_start

pytestmark = pytest.mark.unit

REPORT = Path(__file__).resolve().parents[3] / "docs" / "cold-start-h200"


def test_a_start_takes_its_options() -> None:
    s = parse_start("restored:debug,pyspy=50,VLLM_WORKER_MULTIPROC_METHOD=fork,timeout=300")
    assert s.name == "restored" and s.pyspy_hz == 50 and s.timeout_s == 300
    assert s.env == {
        "VLLM_LOGGING_LEVEL": "DEBUG", "DGEMMA_LOG_LEVEL": "DEBUG", "VLLM_WORKER_MULTIPROC_METHOD": "fork"
    }  # fmt: skip
    assert parse_start("cold").env == {}
    for bad in ("restored:pyspy=fast", "re stored", ":debug", "x:lowercase=1"):
        with pytest.raises(ConfigError):
            parse_start(bad)


def test_the_committed_summary_is_what_the_analyzer_makes_of_the_committed_starts(tmp_path: Path) -> None:
    copy = tmp_path / "report"
    shutil.copytree(REPORT / "starts", copy / "starts")
    assert coldstart_analyze.main([str(copy)]) == 0
    assert (copy / "summary.md").read_text() == (REPORT / "summary.md").read_text()
    for timeline in REPORT.glob("timeline-*.txt"):
        assert (copy / timeline.name).read_text() == timeline.read_text()
