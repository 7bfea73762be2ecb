"""The GPU host's scripts (devtools/lab/gpu_host/) assume no particular host: its folders and what one
call carries are settings with defaults, and run.sh's steps take them."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
HOST = ROOT / "devtools" / "lab" / "gpu_host"


def _run(step: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(HOST / "run.sh"), *step], cwd=cwd, env={**os.environ, **env},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_run_stages_pieces_from_the_folders_it_is_given(tmp_path: Path) -> None:
    checkout, host = tmp_path / "checkout", tmp_path / "host"
    for d, part in (("b", "aa"), ("b", "ab"), ("k", "aa")):
        (checkout / "carried" / d).mkdir(parents=True, exist_ok=True)
        (checkout / "carried" / d / f"part.{part}").write_bytes(part.encode())
    env = {"HOST_DIR": str(host), "PIECES": "carried", "STAGE": str(tmp_path / "s")}
    for d, part, count in (("b", "aa", "1"), ("b", "ab", "2"), ("k", "aa", "1")):
        done = _run(["stage", d, part], env, checkout)
        assert done.returncode == 0 and done.stdout.strip() == count, done.stderr
    assert sorted(p.name for p in (tmp_path / "s" / "b").iterdir()) == ["part.aa", "part.ab"]
    assert _run(["stage", "b", "zz"], env, checkout).returncode != 0  # a piece not carried
    refused = _run(["poll"], env | {"JOB": "train"}, checkout)
    assert refused.returncode == 2 and "arms, gpu-check or coldstart" in refused.stderr
    assert _run(["nothing"], env, checkout).returncode == 2


def test_no_script_assumes_one_hosts_folders_or_transfer_limit() -> None:
    for script in HOST.glob("*.sh"):
        text = script.read_text()
        assert "/root" not in text, script.name
        assert not re.search(r"\b\d+ ?(MiB|MB|M)\b", text), script.name  # a piece's size is the caller's
