"""The engine command the supervisor builds: shared pieces, CPU vs GPU, and refusals."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from app.core.config import ConfigError
from app.gateway.settings import GatewaySettings
from deploy.runtime.gpu_budget import BIG_CONFIG, FitError
from deploy.runtime.settings import EngineSettings, SupervisorSettings
from deploy.runtime.supervisor import engine_command, weights_command
from tests.helpers.deploy import fake_nvidia_smi, graph_sizes

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def an_l4(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine has no GPU: a stand-in nvidia-smi reports an L4."""
    bin_dir = tmp_path_factory.mktemp("bin")
    fake_nvidia_smi(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return bin_dir


@pytest.fixture
def int4_model(tmp_path: Path) -> Path:
    config = json.loads(BIG_CONFIG.read_text())
    config["quantization_config"] = {"quant_method": "compressed-tensors"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


GATEWAY = GatewaySettings(served_model="dgemma-26b-w4a16", model_aliases="prod")


def test_gpu_command_from_the_l4_profile(int4_model: Path) -> None:
    argv, env = engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    assert argv[:3] == ["vllm", "serve", str(int4_model)]
    assert argv[argv.index("--served-model-name") + 1 : argv.index("--host")] == [
        "dgemma-26b-w4a16",
        "jev-latest",
        "jev-preview",
        "prod",
    ]
    assert _flag(argv, "--logprobs-mode") == "raw_logprobs"  # /v1/systemone needs it
    assert _flag(argv, "--attention-backend") == "TRITON_ATTN"
    assert _flag(argv, "--moe-backend") == "marlin"  # the L4's own choice, and what the H200 measured
    assert _flag(argv, "--max-num-seqs") == "32"
    assert json.loads(_flag(argv, "--diffusion-config")) == {"canvas_length": 32}
    assert int(_flag(argv, "--kv-cache-memory-bytes")) > 2**30
    assert "--enable-prefix-caching" in argv and "--language-model-only" in argv
    assert _flag(argv, "--host") == "127.0.0.1"  # the engine is internal; only the gateway is exposed
    assert not any("flashinfer" in a.lower() for a in argv)
    assert env["VLLM_NO_USAGE_STATS"] == "1"


def test_cpu_and_gpu_share_names_address_and_logprobs(int4_model: Path) -> None:
    cpu, _ = engine_command(GATEWAY, EngineSettings(engine_mode="cpu", model_dir=int4_model, engine_port=9))
    gpu, _ = engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model, engine_port=9))
    for flag in ("--served-model-name", "--host", "--port", "--logprobs-mode"):
        i, j = cpu.index(flag), gpu.index(flag)
        assert cpu[i : i + 2] == gpu[j : j + 2], flag
    assert "--language-model-only" in cpu and "--language-model-only" in gpu
    assert cpu[1].endswith("cpu_launcher.py") and "--enforce-eager" in cpu


def test_gpu_command_refuses_a_canvas_that_does_not_fit(int4_model: Path) -> None:
    with pytest.raises(FitError, match="sampler fp32 buffer"):
        engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model, engine_canvas=256))


def test_flashinfer_env_is_refused(int4_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_ATTENTION_BACKEND", "FLASHINFER")
    with pytest.raises(ConfigError, match="FlashInfer is excluded"):
        engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    with pytest.raises(ValueError, match="FlashInfer is excluded"):
        EngineSettings(engine_attention_backend="flashinfer")


def test_weights_step_downloads_or_verifies() -> None:
    download = weights_command(SupervisorSettings(weights_url="gs://b/p", model_dir=Path("/w")))
    assert download[-4:] == ["weights", "download", "gs://b/p", "/w"]
    assert weights_command(SupervisorSettings(model_dir=Path("/w")))[-3:] == ["weights", "verify", "/w"]


def test_the_gpu_it_runs_on_must_be_the_one_the_profilegraph_sizes(int4_model: Path, an_l4: Path) -> None:
    fake_nvidia_smi(an_l4, "NVIDIA A100-SXM4-40GB", 40960)
    with pytest.raises(
        FitError,
        match=re.escape("has a NVIDIA A100-SXM4-40GB with 40.0 GiB, but the fit profile sizes vLLM for l4"),
    ):
        engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    argv, _ = engine_command(
        GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model, engine_gpu="a100-40gb")
    )
    assert argv[:2] == ["vllm", "serve"]


def test_no_gpu_at_all_is_refused_in_gpu_mode(
    int4_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, whatever machine runs the test
    with pytest.raises(FitError, match="no NVIDIA GPU visible"):
        engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    engine_command(GATEWAY, EngineSettings(engine_mode="cpu", model_dir=int4_model))  # CPU needs none


def test_the_gpu_engine_never_asks_for_flashinfers_sampler(
    int4_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, env = engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    assert env["VLLM_USE_FLASHINFER_SAMPLER"] == "0"  # else vLLM 0.32 imports FlashInfer at start
    monkeypatch.setenv("VLLM_USE_FLASHINFER_SAMPLER", "1")
    with pytest.raises(ConfigError, match="FlashInfer's sampler"):
        engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))


def test_the_l4_profile_on_a_larger_gpu_only_when_asked(int4_model: Path, an_l4: Path) -> None:
    fake_nvidia_smi(an_l4, "NVIDIA H200", 143771)
    with pytest.raises(FitError, match="DGEMMA_ENGINE_ON_LARGER_GPU=true"):
        engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    on_h200 = EngineSettings(engine_mode="gpu", model_dir=int4_model, engine_on_larger_gpu=True)
    argv, _ = engine_command(GATEWAY, on_h200)
    fake_nvidia_smi(an_l4)  # an L4 again
    on_l4, _ = engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    # The same engine as on the L4, and vLLM asks for the L4's share of the H200, not 92 % of it.
    for flag in ("--max-num-seqs", "--max-model-len", "--kv-cache-memory-bytes", "--diffusion-config"):
        assert _flag(argv, flag) == _flag(on_l4, flag), flag
    asked = float(_flag(argv, "--gpu-memory-utilization")) * 143771
    assert asked == pytest.approx(0.92 * 23034, rel=1e-3)


def test_a_smaller_gpu_cannot_stand_in_for_the_profile(int4_model: Path, an_l4: Path) -> None:
    fake_nvidia_smi(an_l4, "NVIDIA T4", 15360)
    settings = EngineSettings(engine_mode="gpu", model_dir=int4_model, engine_on_larger_gpu=True)
    with pytest.raises(FitError, match="cannot stand in"):
        engine_command(GATEWAY, settings)


def test_scheduling_flags_default_to_what_the_h200_arms_measured_best(int4_model: Path) -> None:
    argv, _ = engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    # docs/engine-arms-h200/README.md: async scheduling off and full steps in CUDA graphs.
    assert "--no-async-scheduling" in argv and "--async-scheduling" not in argv
    # docs/cold-start-h200/arms: the profile's own sizes, to the 2048 cap, given as the list alone.
    assert len(graph_sizes(argv)) == 75 and graph_sizes(argv)[-1] == 2048
    assert "--max-cudagraph-capture-size" not in argv
    vllms = EngineSettings(
        engine_mode="gpu", model_dir=int4_model, engine_async_scheduling=True,
        engine_max_cudagraph_capture_size=0, engine_cudagraph_sizes="vllm",
    )  # fmt: skip
    argv, _ = engine_command(GATEWAY, vllms)
    assert "--async-scheduling" in argv and "--no-async-scheduling" not in argv
    assert not any("cudagraph" in a for a in argv)  # 0: vLLM's own cap (512 on the L4 and the H200)


def test_scheduling_settings_from_the_environment(int4_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DGEMMA_ENGINE_ASYNC_SCHEDULING", "false")
    monkeypatch.setenv("DGEMMA_ENGINE_MAX_CUDAGRAPH_CAPTURE_SIZE", "1024")
    settings = SupervisorSettings(engine_mode="gpu", model_dir=int4_model)
    assert settings.engine_async_scheduling is False and settings.engine_max_cudagraph_capture_size == 1024
    argv, _ = engine_command(GATEWAY, settings)
    assert "--no-async-scheduling" in argv and graph_sizes(argv)[-1] == 1024
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        EngineSettings(engine_max_cudagraph_capture_size=-1)


def test_the_cpu_engine_takes_no_scheduling_flags(int4_model: Path) -> None:
    settings = EngineSettings(model_dir=int4_model, engine_async_scheduling=False)
    argv, _ = engine_command(GATEWAY, settings)
    assert "--no-async-scheduling" not in argv  # the CPU path is the local stack's, left as it is


@pytest.fixture
def an_h200(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in nvidia-smi reports an H200 instead."""
    bin_dir = tmp_path / "h200"
    bin_dir.mkdir()
    fake_nvidia_smi(bin_dir, name="NVIDIA H200", mib=143771)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


@pytest.mark.usefixtures("an_h200")
def test_engines_on_one_gpu_share_its_memory_and_take_ports_in_turn(int4_model: Path) -> None:
    one = EngineSettings(
        engine_mode="gpu", model_dir=int4_model, engine_gpu="h200", engine_port=9000, engine_replicas=1
    )
    two = one.model_copy(update={"engine_replicas": 2})
    alone, _ = engine_command(GATEWAY, one)
    first, _ = engine_command(GATEWAY, two)
    second, _ = engine_command(GATEWAY, two, replica=1)
    assert (_flag(first, "--port"), _flag(second, "--port")) == ("9000", "9001")
    # Each engine its half of the one engine's share; the same batch and KV as one engine alone.
    assert _flag(alone, "--gpu-memory-utilization") == "0.92"
    assert _flag(first, "--gpu-memory-utilization") == _flag(second, "--gpu-memory-utilization") == "0.46"
    for flag in ("--max-num-seqs", "--kv-cache-memory-bytes"):
        assert _flag(first, flag) == _flag(alone, flag), flag
    assert graph_sizes(first) == graph_sizes(alone)


def test_engines_whose_share_cannot_hold_the_model_are_refused(int4_model: Path) -> None:
    # An L4 holds one engine (19.5 GiB of 21.2): two would get 10.6 GiB each.
    two = EngineSettings(engine_mode="gpu", model_dir=int4_model, engine_replicas=2)
    with pytest.raises(FitError, match=r"to each of 2 engines \(engine_replicas\).*or engine_replicas"):
        engine_command(GATEWAY, two)


def test_several_engines_need_the_gpu_engine() -> None:
    with pytest.raises(ValueError, match="engine_replicas 2 needs the GPU engine"):
        EngineSettings(engine_replicas=2)


@pytest.mark.usefixtures("an_h200")
def test_the_gateway_reads_through_every_engine_and_admits_their_batches(int4_model: Path) -> None:
    from deploy.runtime.supervisor import Supervisor

    settings = SupervisorSettings(
        engine_mode="gpu", model_dir=int4_model, engine_gpu="h200", engine_replicas=2, engine_port=9000
    )
    sup = Supervisor(GATEWAY, settings, weights=False)
    assert sup.gateway_settings.engine_url == "http://127.0.0.1:9000,http://127.0.0.1:9001"
    assert sup.gateway_settings.max_concurrent_decisions == 64  # unset: both engines' 32 seqs
    assert [e.name for e in sup.engines] == ["engine-1", "engine-2"]
    assert [_flag(e.argv, "--port") for e in sup.engines] == ["9000", "9001"]
    explicit = Supervisor(
        GATEWAY.model_copy(update={"max_concurrent_decisions": 40}), settings, weights=False
    )
    assert explicit.gateway_settings.max_concurrent_decisions == 40  # set: the operator's
    alone = Supervisor(GATEWAY, settings.model_copy(update={"engine_replicas": 1}), weights=False)
    assert alone.gateway_settings.engine_url == "http://127.0.0.1:9000" and alone.engine.name == "engine"


def test_graph_sizes_the_start_and_the_load_format(int4_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start's knobs (issue 34): which CUDA graphs, how the engine core starts, how weights load."""
    argv, env = engine_command(GATEWAY, EngineSettings(engine_mode="gpu", model_dir=int4_model))
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] == "fork" and "--load-format" not in argv
    sizes = graph_sizes(argv)
    assert len(sizes) == 75 and sizes[-1] == 2048
    monkeypatch.setenv("DGEMMA_ENGINE_CUDAGRAPH_SIZES", "vllm")
    monkeypatch.setenv("DGEMMA_ENGINE_MULTIPROC_METHOD", "spawn")
    monkeypatch.setenv("DGEMMA_ENGINE_LOAD_FORMAT", "fastsafetensors")
    argv, env = engine_command(GATEWAY, SupervisorSettings(engine_mode="gpu", model_dir=int4_model))
    assert "--cudagraph-capture-sizes" not in argv and _flag(argv, "--max-cudagraph-capture-size") == "2048"
    assert (
        env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn" and _flag(argv, "--load-format") == "fastsafetensors"
    )
    explicit = EngineSettings(engine_mode="gpu", model_dir=int4_model, engine_cudagraph_sizes="64,8, 8")
    argv, _ = engine_command(GATEWAY, explicit)
    assert graph_sizes(argv) == [8, 64] and "--max-cudagraph-capture-size" not in argv
    for bad in ("fast", "0,8", ""):
        with pytest.raises(ValueError, match=r"vllm, canvas|at least 1 token"):
            EngineSettings(engine_cudagraph_sizes=bad)
    with pytest.raises(ValueError):
        EngineSettings(engine_multiproc_method="forkserver")
