"""The generator's draws depend on their seeds alone: every stream and table the training scripts read
(3,000 draws, tests/helpers/corpus_draws.py) comes out the same in this process and in two others with
other hash seeds, so a checkout retrains the toy on the data it was trained on; and the digests see
the draws (two seeds, two streams)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.devstack.stack import script_module
from tests.helpers.corpus_draws import record

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def test_the_draws_depend_on_their_seeds_alone() -> None:
    here = record(script_module("alert_corpus"))
    assert here["draws"] == 3000
    for hash_seed in ("0", "4242"):
        done = subprocess.run(
            [sys.executable, "-m", "tests.helpers.corpus_draws"],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        there = json.loads(done.stdout)
        assert there["tables"] == here["tables"], hash_seed
        for name, stream in here["streams"].items():
            assert there["streams"][name] == stream, f"{name}, PYTHONHASHSEED={hash_seed}"
    streams = here["streams"]
    assert streams["train_stream:0"]["digests"] != streams["train_stream:1"]["digests"]
    assert len(set(streams["examples:dev:any"]["digests"])) > 140  # 150 draws, nearly all distinct
