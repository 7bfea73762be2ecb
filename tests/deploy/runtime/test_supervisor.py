"""The supervisor on the CPU stack: readiness order, drain on SIGTERM under load, child death, FlashInfer.

These start stacks of their own (the session's stack must survive), about 40 s each.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from app.core.net import free_port
from app.core.polling import wait_http_ok, wait_until
from deploy.runtime.weights import MANIFEST, build_manifest
from devtools.harness.local_stack import ROOT, local_stack, spawn_dev
from tests.helpers.deploy import fake_nvidia_smi
from tests.helpers.gateway import ALERT_QUESTIONS, decision

pytestmark = [pytest.mark.integration, pytest.mark.engine]


def _in_flight(port: int) -> float:
    """Decisions the gateway is reading now (its /metrics)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    found = re.search(r"^dgemma_decisions_inflight (\S+)$", text, re.M)
    return float(found[1]) if found else 0.0


def _children_alive(pid: int) -> list[str]:
    out = subprocess.run(["pgrep", "-g", str(pid)], capture_output=True, text=True).stdout
    return out.split()


@pytest.mark.parametrize(
    "env", [{"DGEMMA_ENGINE_ATTENTION_BACKEND": "FLASHINFER"}, {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}]
)
def test_flashinfer_is_refused_before_anything_starts(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "dev", "--port", str(free_port())],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "FlashInfer is excluded" in " ".join(done.stderr.split())


def test_gateway_only_after_engine_health_and_sigterm_drains_under_load(tmp_path: Path) -> None:
    proc, port, engine_port, alerts_port = spawn_dev(tmp_path / "engine.log")
    try:
        engine_healthy_at = gateway_listening_at = None
        deadline = time.monotonic() + 400
        while gateway_listening_at is None:
            assert proc.poll() is None and time.monotonic() < deadline, "stack did not start"
            now = time.monotonic()
            if engine_healthy_at is None:
                try:
                    if httpx.get(f"http://127.0.0.1:{engine_port}/health", timeout=1).status_code == 200:
                        engine_healthy_at = now
                except httpx.HTTPError:
                    pass
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                gateway_listening_at = now
            except httpx.HTTPError:
                time.sleep(0.2)
        assert engine_healthy_at is not None and engine_healthy_at <= gateway_listening_at
        assert httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200
        assert wait_http_ok(f"http://127.0.0.1:{alerts_port}/readyz", 30), "the router is not up"

        # Load sized to drain within the budget on 2 CPU cores: 4 decisions x 3 reads, ~3 s in all.
        body = decision(ALERT_QUESTIONS, read_policy={"mode": "single"})

        def call(_: int) -> int:
            r = httpx.post(f"http://127.0.0.1:{port}/v1/systemone", json=body, timeout=60)
            return r.status_code

        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(call, i) for i in range(4)]
            assert wait_until(lambda: _in_flight(port) >= 4, 30, interval_s=0.05), "not all in flight"
            sigterm_at = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            statuses = [f.result() for f in futures]
            code = proc.wait(timeout=30)
            stopped_in = time.monotonic() - sigterm_at
        assert statuses == [200] * 4, "in-flight decisions finish during the drain"
        assert code == 0
        assert stopped_in < 10.0 + 2.0  # shutdown_grace_s (Cloud Run's 10 s) plus process exit
        for url in (f"http://127.0.0.1:{port}/healthz", f"http://127.0.0.1:{alerts_port}/healthz"):
            with pytest.raises(httpx.HTTPError):
                httpx.get(url, timeout=2)
        time.sleep(0.5)
        assert _children_alive(proc.pid) == [], "no engine, gateway or router process is left"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_engine_death_ends_the_supervisor_with_an_error(tmp_path: Path) -> None:
    with local_stack(tmp_path / "engine.log") as stack:
        os.killpg(stack.engine_pid(), signal.SIGKILL)
        code = stack.proc.wait(timeout=30)
        assert code == 1  # Cloud Run replaces an instance whose container exits non-zero
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{stack.url}/healthz", timeout=2)


@pytest.mark.parametrize(
    ("gpu", "refusal"),
    [
        (("NVIDIA L4", 23034), "cannot fit: needs"),  # the right GPU, a checkpoint too big for it
        (("NVIDIA A100-SXM4-40GB", 40960), "cannot fit: this instance has a NVIDIA A100-SXM4-40GB"),
        (None, "cannot fit: no NVIDIA GPU visible"),
    ],
)
def test_gpu_mode_refuses_before_anything_starts(
    tmp_path: Path, gpu: tuple[str, int] | None, refusal: str
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    config = json.loads((ROOT / "deploy/models/diffusiongemma-26b-a4b.config.json").read_text())
    (model / "config.json").write_text(json.dumps(config))  # bf16 (no quantization_config): 47 GiB
    (model / MANIFEST).write_text(build_manifest(model).to_json())  # baked weights that verify
    # No GPU here (nor, with an empty PATH, on a GPU runner): a stand-in nvidia-smi says which one
    # "it" has. The processes started need no PATH: sys.executable is absolute.
    path = str(tmp_path)
    if gpu is not None:
        fake_nvidia_smi(tmp_path, *gpu)
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "run", "--port", str(free_port())],
        cwd=ROOT,
        env={
            **os.environ,
            "PATH": path,
            "DGEMMA_ENGINE_MODE": "gpu",
            "DGEMMA_MODEL_DIR": str(model),
            "DGEMMA_ALLOW_ANY_KEY": "true",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    (line,) = [entry for entry in logged if entry.get("severity") == "ERROR"]
    assert line["message"].startswith(refusal), line["message"]
    if gpu and "L4" in gpu[0]:
        assert "weights: experts" in line["message"]
