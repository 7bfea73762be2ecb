"""What `dgemma quantize` refuses before the engine's python runs (deploy/models/checkpoints.py): a
source whose shards are not safetensors is said in one line, exit 2, and no output folder is made;
a run that fails leaves no empty one. The real CLI, no engine (the quantizer is a stand-in)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.models import TOY_DIR
from tests.helpers.checkpoints import bf16_tensors, write_safetensors

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]


def _quantize(src: Path, dst: Path, **env: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "deploy.cli", "quantize", str(src), str(dst)]
    return subprocess.run(
        argv, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def _source(root: Path) -> Path:
    """The toy as a bf16 source checkpoint (its config and tokenizer), in two shards."""
    shutil.copytree(TOY_DIR, root, ignore=shutil.ignore_patterns("*.safetensors", "manifest.json"))
    specs = bf16_tensors(json.loads((TOY_DIR / "config.json").read_text()))
    names = list(specs)
    write_safetensors(root / "model-00001-of-00002.safetensors", {n: specs[n] for n in names[:50]})
    write_safetensors(root / "model-00002-of-00002.safetensors", {n: specs[n] for n in names[50:]})
    return root


def _cut(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)


@pytest.mark.parametrize(
    ("spoil", "expected"),
    [
        (lambda p: p.write_bytes(os.urandom(2**20)), "model-00002-of-00002.safetensors: its first 8 bytes"),
        (lambda p: p.write_bytes(b""), "model-00002-of-00002.safetensors: 0 bytes, not a safetensors file"),
        (_cut, "model-00002-of-00002.safetensors: the header's tensors take"),
    ],
    ids=["random bytes", "empty", "cut short"],
)
def test_quantize_refuses_a_corrupt_shard_and_makes_no_folder(
    tmp_path: Path, spoil: object, expected: str
) -> None:
    src, dst = _source(tmp_path / "bf16"), tmp_path / "w4a16"
    spoil(src / "model-00002-of-00002.safetensors")  # type: ignore[operator]
    done = _quantize(src, dst)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f"{src} is not a readable checkpoint: {expected}" in done.stderr
    assert not dst.exists()


def test_a_quantize_that_fails_leaves_no_empty_folder(tmp_path: Path) -> None:
    """The quantizer made the output folder, then failed (a stand-in for the engine's python that
    does just that): the folder goes with it; one that existed before stays."""
    src, dst = _source(tmp_path / "bf16"), tmp_path / "w4a16"
    failing = tmp_path / "python"
    failing.write_text('#!/bin/sh\nmkdir -p "$3"\nexit 1\n')  # $1 quantize.py, $2 SRC, $3 DST
    failing.chmod(0o755)
    done = _quantize(src, dst, DGEMMA_ENGINE_PYTHON=str(failing))
    assert done.returncode == 1 and not dst.exists(), done.stderr[-2000:]
    dst.mkdir()
    assert _quantize(src, dst, DGEMMA_ENGINE_PYTHON=str(failing)).returncode == 1 and dst.is_dir()
