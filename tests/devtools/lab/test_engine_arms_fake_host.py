"""The engine arms end to end on a scripted GPU host (`devtools.harness.fake_gpu`, as for `dgemma gpu-check`):
each arm started through `dgemma run` with its settings, loaded through the gateway at each level,
stopped, and the report written. The plumbing only: every GPU figure here is the script's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.core.net import free_port
from tests.deploy.gpucheck.test_gpu_check_fake_host import checkpoint, gpu_host  # noqa: F401  (fixtures)
from tests.helpers.deploy import graph_sizes

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def _arms(env: dict[str, str], model: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devtools.lab.engine_arms", str(model), "--out", str(out),
         "--cache-dir", str(out.parent / "compile"), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_three_arms_side_by_side(gpu_host: dict[str, str], checkpoint: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "arms"
    done = _arms(
        gpu_host, checkpoint, out, "--clients", "2", "--seconds", "5", "--latency-seconds", "5",
        "--overhead-rounds", "2", "--arm", "baseline", "--arm", "async-on:engine_async_scheduling=true",
        "--arm", "h200:engine_gpu=h200,engine_max_num_seqs=64",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "async-on @2:" in done.stdout  # progress as it goes
    report = json.loads((out / "arms.json").read_text())
    baseline, async_on, h200 = report["runs"]
    assert [lv["clients"] for lv in baseline["levels"]] == [1, 2]
    assert all(lv["failures"] == 0 and lv["rps"] > 0 for r in report["runs"] for lv in r["levels"])
    assert "--async-scheduling" in async_on["start"]["engine_argv"]
    assert "--no-async-scheduling" in baseline["start"]["engine_argv"]  # today's default
    assert [r["start"]["cache"] for r in report["runs"]] == ["cold", "warm", "warm"]
    assert all(r["start"]["exit_code"] == 0 and r["peak_mib"] == 19083 for r in report["runs"])
    # The h200 arm: that GPU's serving profile (two engines), not held to the L4's share of the GPU;
    # its graph cap derived from its seqs.
    argv = h200["start"]["engine_argv"]
    assert (h200["gpu"], baseline["gpu"]) == ("h200", "l4")
    assert _flag(argv, "--max-num-seqs") == "64" and graph_sizes(argv)[-1] == 4096
    assert _flag(argv, "--gpu-memory-utilization") == "0.46"  # each of its two engines half the H200's
    assert float(_flag(baseline["start"]["engine_argv"], "--gpu-memory-utilization")) < 0.2  # the L4's share
    assert _flag(baseline["start"]["engine_argv"], "--max-num-seqs") == "32"
    assert all(r["overhead"]["p50_ratio"] > 0 and r["overhead"]["gateway_share"] < 1 for r in report["runs"])
    md = (out / "arms.md").read_text()
    assert "| async-on | 1 |" in md and "plus `--async-scheduling`" in md
    assert "`--cudagraph-capture-sizes 1 2 ... 4096 (123 values)` `--gpu-memory-utilization 0.46`" in md
    assert "over the" not in md
    assert (out / "arms.png").exists() and (out / "02-async-on" / "c2" / "throughput_stats.csv").exists()


def test_arms_past_the_deadline_are_skipped_and_reported(
    gpu_host: dict[str, str],  # noqa: F811
    checkpoint: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    out = tmp_path / "arms"
    done = _arms(gpu_host, checkpoint, out, "--start-by-s", "0", "--arm", "baseline")
    assert done.returncode == 1
    report = json.loads((out / "arms.json").read_text())
    assert report["runs"][0]["skipped"].startswith("not started")
    assert "not started" in (out / "arms.md").read_text()


def test_an_arm_of_two_copies_of_the_kit_on_one_gpu(
    gpu_host: dict[str, str],  # noqa: F811
    checkpoint: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    out = tmp_path / "arms"
    done = _arms(
        gpu_host, checkpoint, out, "--clients", "4", "--seconds", "5", "--latency-seconds", "5",
        "--overhead-rounds", "0", "--arm", "two:engine_gpu=h200,engine_replicas=1,replicas=2",
        "--arm", "r2:engine_gpu=h200,engine_replicas=2",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run, r2 = json.loads((out / "arms.json").read_text())["runs"]
    # Two engines behind the kit's one gateway (DGEMMA_ENGINE_REPLICAS): the engine figures are both's.
    assert _flag(r2["start"]["engine_argv"], "--gpu-memory-utilization") == "0.46"
    assert all(lv["failures"] == 0 and lv["rps"] > 0 for lv in r2["levels"])
    assert r2["levels"][1]["engine"]["prefix_hit_rate"] == pytest.approx(0.5)
    assert run["replicas"] == 2 and len(run["replica_starts"]) == 1
    starts = [run["start"], *run["replica_starts"]]
    assert [s["cache"] for s in starts] == ["cold", "warm"] and all(s["exit_code"] == 0 for s in starts)
    # Each engine its half of the share one engine of the profile gets, on its own port.
    assert [_flag(s["engine_argv"], "--gpu-memory-utilization") for s in starts] == ["0.46", "0.46"]
    assert len({_flag(s["engine_argv"], "--port") for s in starts}) == 2
    latency, throughput = run["levels"]
    arm_dir = out / "01-two"
    # The latency phase's one client loads the first copy only; 4 clients are 2 on each.
    assert (arm_dir / "c1" / "replica-1" / "latency_stats.csv").exists()
    assert not (arm_dir / "c1" / "replica-2").exists()
    rates = []
    for replica in ("replica-1", "replica-2"):
        figures = json.loads((arm_dir / "c4" / replica / "throughput_figures.json").read_text())
        rates.append(figures["rps"])
    assert all(rate > 0 for rate in rates)
    assert throughput["rps"] == pytest.approx(sum(rates), rel=1e-6)  # no failures: the rates add up
    assert throughput["engine"]["replicas"] == 2 and "replicas" not in latency["engine"]
    assert "`replicas=2`" in (out / "arms.md").read_text()


def test_two_engines_on_one_gpu_behind_one_gateway(
    gpu_host: dict[str, str],  # noqa: F811
    checkpoint: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`DGEMMA_ENGINE_REPLICAS=2` through `dgemma run`: the supervisor starts two engines one after
    the other on consecutive ports, each with half the memory share; the one gateway spreads
    decisions between them; SIGTERM stops all of it."""
    import asyncio
    import secrets

    import httpx

    from deploy.gpucheck import child
    from tests.helpers.gateway import NOUL, decision

    for name, value in gpu_host.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    out.mkdir()
    key, port, engine_port = secrets.token_urlsafe(16), free_port(), free_port()
    env = child.run_env(
        checkpoint, "h200", tmp_path / "cc", key=key, port=port, engine_port=engine_port, on_larger=False,
        startup_timeout_s=1700.0,
    ) | {"DGEMMA_ENGINE_REPLICAS": "2"}  # fmt: skip
    proc, start = child.start(env, out, "cold", 1700.0)
    try:

        async def decide(n: int) -> list[int]:
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=30
            ) as http:
                replies = await asyncio.gather(
                    *(http.post("/v1/systemone", json=decision(NOUL)) for _ in range(n))
                )
            return [r.status_code for r in replies]

        def served() -> list[float]:  # prompt tokens each engine has read (the warm-up's included)
            texts = [
                httpx.get(f"http://127.0.0.1:{p}/metrics", timeout=5).text
                for p in (engine_port, engine_port + 1)
            ]
            return [
                float(next(ln.split()[-1] for ln in t.splitlines() if "prompt_tokens_total" in ln))
                for t in texts
            ]

        before = served()
        assert asyncio.run(decide(12)) == [200] * 12
        after = served()
    finally:
        child.stop(proc, start)
    assert all(b < a for b, a in zip(before, after, strict=True)), (before, after)  # both answered some
    assert start.exit_code == 0
    log = (out / "run-cold.log").read_text()
    assert "started engine-1" in log and "started engine-2" in log
    argvs = [
        json.loads(line[line.index("{") :])["argv"] for line in log.splitlines() if '"started engine-' in line
    ]
    assert [_flag(a, "--port") for a in argvs] == [str(engine_port), str(engine_port + 1)]
    assert [_flag(a, "--gpu-memory-utilization") for a in argvs] == ["0.46", "0.46"]
