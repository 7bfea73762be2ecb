"""The engine profile's analyzer (devtools/lab/profile_analyze.py) on CPU: the committed H200 tables
(docs/throughput-h200/analysis.md) as it makes them from the run's profiles (their copy in
tests/data/throughput-h200/, 99 kB), and the README's figures among them."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from devtools.lab import profile_analyze

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
REPORT = ROOT / "docs" / "throughput-h200"
PROFILES = ROOT / "tests" / "data" / "throughput-h200" / "profiles.tar.gz"


def test_the_committed_tables_are_what_the_analyzer_makes_of_the_committed_profiles(tmp_path: Path) -> None:
    shutil.copy(PROFILES, tmp_path)
    assert profile_analyze.main([str(tmp_path), "--halve-waiting"]) == 0
    made = (tmp_path / "analysis.md").read_text()
    assert made == (REPORT / "analysis.md").read_text()
    # The README's figures are the analysis's.
    for row in (
        "| forward, eager: no CUDA graph (batch > 512 tokens) | 30.4 % |",
        "| sample_tokens (DiffusionSampler) | 25.6 % |",
        "| forward, piecewise CUDA graphs | 13.7 % |",
        "| forward, eager: no CUDA graph (batch > 512 tokens) / MoE (Marlin custom op) | 11.3 % |",
        "16.0 requests each, 82 ms apart",
        "858,336 / 1,013,800 = 84.7 %",
        "running: {3: 26, 32: 16, 29: 1}",
    ):
        assert row in made


def test_an_untarred_run_reads_the_same_and_a_missing_one_is_refused(tmp_path: Path) -> None:
    with tarfile.open(PROFILES) as tar:
        tar.extractall(tmp_path, filter="data")
    assert profile_analyze.main([str(tmp_path), "--halve-waiting"]) == 0
    assert (tmp_path / "analysis.md").read_text() == (REPORT / "analysis.md").read_text()
    assert profile_analyze.main([str(tmp_path / "none")]) == 2
