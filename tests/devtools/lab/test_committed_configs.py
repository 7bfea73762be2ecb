"""Every campaign config committed beside its results still parses: the engine arms' arms.toml files
(docs/) and the toy sweeps' sweep.toml files (evals/alerts/results/), as the lab reads them now; and
so do the campaigns planned but not yet run (devtools/lab/campaigns/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.lab.engine_arms import load_arms
from devtools.lab.toy_sweep import load_sweep

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
ARMS = sorted(
    [*(ROOT / "docs").rglob("arms.toml"), *(ROOT / "devtools" / "lab" / "campaigns").glob("*.toml")]
)
SWEEPS = sorted([*(ROOT / "docs").rglob("sweep.toml"), *(ROOT / "evals").rglob("sweep.toml")])


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_committed_configs_are_found() -> None:
    assert len(ARMS) >= 8 and len(SWEEPS) >= 2


@pytest.mark.parametrize("path", ARMS, ids=_id)
def test_every_committed_arms_file_parses(path: Path) -> None:
    assert load_arms(path)


@pytest.mark.parametrize("path", SWEEPS, ids=_id)
def test_every_committed_sweep_parses(path: Path) -> None:
    assert load_sweep(path)
