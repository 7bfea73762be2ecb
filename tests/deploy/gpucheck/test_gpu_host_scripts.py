"""The GPU host's scripts (devtools/gpu_host/) assume no particular host: its folders and what one
call carries are settings with defaults, and run.sh's steps take them."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
HOST = ROOT / "devtools" / "gpu_host"


def _run(step: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(HOST / "run.sh"), *step], cwd=cwd, env={**os.environ, **env},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_run_stages_pieces_and_wheels_from_the_folders_it_is_given(tmp_path: Path) -> None:
    checkout, host = tmp_path / "checkout", tmp_path / "host"
    (checkout / "carried" / "pieces").mkdir(parents=True)
    (checkout / "carried" / "pieces" / "x.aa").write_bytes(b"a")
    (checkout / "carried" / "pieces" / "x.ab").write_bytes(b"b")
    (checkout / "extra").mkdir()
    (checkout / "extra" / "locust-0-py3-none-any.whl").write_bytes(b"w")
    env = {
        "HOST_DIR": str(host),
        "PARTS": "carried/pieces/x.",
        "STAGE": str(tmp_path / "s"),
        "EXTRA_WHEELS": "extra",
    }
    for part in ("aa", "ab"):
        done = _run(["stage", part], env, checkout)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["x.aa", "x.ab"]
    done = _run(["extra"], env, checkout)
    assert done.returncode == 0 and (host / "wheels" / "locust-0-py3-none-any.whl").exists()
    refused = _run(["poll"], env | {"JOB": "train"}, checkout)
    assert refused.returncode == 2 and "arms or gpu-check" in refused.stderr
    assert _run(["nothing"], env, checkout).returncode == 2


def test_no_script_assumes_one_hosts_folders_or_transfer_limit() -> None:
    for script in HOST.glob("*.sh"):
        text = script.read_text()
        assert "/root" not in text, script.name
        assert not re.search(r"\b\d+ ?(MiB|MB|M)\b", text), script.name  # a piece's size is the caller's
