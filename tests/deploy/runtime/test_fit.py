"""L4 fit: the parameter inventory against transformers' own model, published sizes, refusals."""

from __future__ import annotations

import dataclasses
import json

import pytest

from deploy.runtime.gpu_budget import (
    BIG_CONFIG,
    Arch,
    FitError,
    GiB,
    ServingProfile,
    budget,
    check_fits,
    fit,
    load_arch,
    load_config,
    profile_for,
    vllm_flags,
    weight_bytes,
)
from deploy.runtime.serving import (
    MAX_GRAPH_TOKENS,
    SERVING,
    GpuServing,
    canvas_capture_sizes,
    graph_capture_size,
)
from deploy.runtime.settings import EngineSettings

pytestmark = pytest.mark.unit

BIG = BIG_CONFIG
# Published: the full bf16 checkpoint (text + vision tower) is 51,647,701,024 bytes.
PUBLISHED_BF16_BYTES = 51_647_701_024


def test_published_sizes() -> None:
    arch = load_arch(BIG)
    inv = arch.inventory()
    text_bf16 = sum(weight_bytes(arch, "bf16").values())
    vision = PUBLISHED_BF16_BYTES - text_bf16
    assert 0.3e9 * 2 < vision < 0.7e9 * 2, "the rest of the published checkpoint is a ~0.5B vision tower"
    assert text_bf16 + vision == pytest.approx(52e9, rel=0.02)  # bf16 ~ 52 GB
    assert inv["experts"] / sum(inv.values()) == pytest.approx(0.90, abs=0.01)  # experts ~ 90 %
    int4 = sum(weight_bytes(arch, "w4a16", 64).values()) + vision  # vision tower stays bf16
    assert int4 == pytest.approx(16e9, rel=0.05)  # INT4 ~ 16 GB
    assert int4 / (text_bf16 + vision) == pytest.approx(0.30, abs=0.02)


def test_sampler_buffer_is_8_gib_at_32_by_256() -> None:
    b = budget(load_arch(BIG), ServingProfile(max_num_seqs=32, canvas=256))
    row = next(r for r in b.rows if r[0] == "sampler fp32 buffer")
    assert row[1] * GiB == 32 * 256 * 262_144 * 4 == 8 * GiB


def test_default_l4_profile_fits_and_gives_flags() -> None:
    b = budget(load_arch(BIG), ServingProfile())
    check_fits(b)
    assert 18 < b.total_gib <= b.available_gib
    flags = vllm_flags(b)
    assert flags[flags.index("--max-num-seqs") + 1] == "32"
    assert json.loads(flags[flags.index("--diffusion-config") + 1]) == {"canvas_length": 32}
    assert int(flags[flags.index("--max-model-len") + 1]) >= 300 + 4 + 32


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        (ServingProfile(canvas=256), "sampler fp32 buffer"),  # batch 32 needs a canvas <= 64
        (ServingProfile(scheme="bf16"), "weights: experts"),
        (ServingProfile(prompt_tokens=4000), "KV cache"),
    ],
)
def test_refuses_what_does_not_fit(profile: ServingProfile, message: str) -> None:
    with pytest.raises(FitError, match=message):
        check_fits(budget(load_arch(BIG), profile))


def test_group_size_must_divide_the_expert_width() -> None:
    with pytest.raises(FitError, match="704"):
        weight_bytes(load_arch(BIG), "w4a16", 128)
    assert Arch.from_config(json.loads(BIG.read_text())).moe_intermediate % 64 == 0


def test_profile_takes_the_checkpoints_own_quantization() -> None:
    config = load_config(BIG)
    profile = profile_for(EngineSettings(), config)
    assert (profile.scheme, profile.group_size) == ("bf16", 64)
    config["quantization_config"] = {"config_groups": {"group_0": {"weights": {"group_size": 32}}}}
    profile = profile_for(EngineSettings(engine_canvas=48), config)
    assert (profile.scheme, profile.group_size, profile.canvas) == ("w4a16", 32, 48)


def test_fit_without_a_checkpoint_sizes_the_published_int4_recipe() -> None:
    b = fit(EngineSettings(), None, canvas=None, max_num_seqs=16)
    assert (b.profile.scheme, b.profile.group_size, b.profile.max_num_seqs) == ("w4a16", 64, 16)
    with pytest.raises(FitError, match="unknown GPU"):
        fit(EngineSettings(engine_gpu="tpu"))


def test_instance_memory_per_weights_mode() -> None:
    from deploy.cloud.host_budget import check_host_fits, checkpoint_bytes, default_weights_mode, host_budget

    total, largest = checkpoint_bytes(fit(EngineSettings()))
    assert total / 1e9 == pytest.approx(15.7, abs=0.1) and largest == 5 * 10**9
    budgets = {mode: host_budget(mode, total, largest) for mode in ("baked", "download", "gcs_fuse")}
    # Only a download puts the checkpoint itself on the memory disk; read-only image layers do not count.
    assert budgets["download"].rows[0][1] * GiB == pytest.approx(total)
    assert budgets["baked"].rows[0][1] == budgets["gcs_fuse"].rows[0][1] == 0
    assert all(b.fits for b in budgets.values())
    assert default_weights_mode(total, largest) == "baked"
    bf16_total, bf16_largest = checkpoint_bytes(fit(EngineSettings(), None, scheme="bf16"))
    with pytest.raises(FitError, match=r"weights mode 'download' needs 55\.8 GiB of instance memory"):
        check_host_fits(host_budget("download", bf16_total, bf16_largest))
    assert default_weights_mode(bf16_total, bf16_largest) == "baked"
    with pytest.raises(FitError, match="no weights mode fits 4 GiB"):
        default_weights_mode(total, largest, memory_gib=4)


def test_deploy_refuses_a_weights_mode_that_does_not_fit() -> None:
    from deploy.cloud.config import DeployConfig
    from deploy.cloud.weights import choose_mode
    from deploy.runtime.weights import Entry, Manifest

    big = Manifest(tuple(Entry(f"model-{i}.safetensors", 5 * 10**9, "0" * 64) for i in range(8)), "")
    cfg = DeployConfig(project="p-123456", region="europe-west4", weights_mode="download")
    with pytest.raises(FitError, match="weights mode 'download' needs"):
        choose_mode(cfg, big)
    assert choose_mode(DeployConfig(project="p-123456", region="europe-west4"), big) == "baked"


def test_the_full_attention_shape_as_transformers_saves_it() -> None:
    """transformers 5.19 writes global_head_dim / num_global_key_value_heads as per-layer overrides
    of the full-attention layers (a config `dgemma model random` saved): the same architecture.
    Read without them, the full layers took the sliding layers' KV shape and the KV cache came out
    9 % larger (found on the H200)."""
    published = load_config(BIG)
    text = {k: v for k, v in published["text_config"].items() if "global" not in k}
    text["per_layer_config"] = {
        str(i): {"head_dim": 512, "num_key_value_heads": 2}
        for i, kind in enumerate(text["layer_types"])
        if kind == "full_attention"
    }
    saved = Arch.from_config({**published, "text_config": text})
    assert saved == Arch.from_config(published)
    assert saved.kv_bytes_per_token() == 225_280  # 220 KiB, as vLLM allocates (10,454 tokens in 2.26 GiB)


def test_the_gpu_names_its_serving_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, seqs, batched tokens and the CUDA-graph cap follow `engine_gpu`; set, they win."""
    l4 = EngineSettings()
    assert (l4.engine_max_num_seqs, l4.engine_max_num_batched_tokens) == (32, 4096)
    assert l4.engine_max_cudagraph_capture_size == 2048  # docs/engine-arms-h200
    monkeypatch.setitem(SERVING, "h200", GpuServing(max_num_seqs=40, max_num_batched_tokens=8192))
    h200 = EngineSettings(engine_gpu="h200")
    assert (h200.engine_max_num_seqs, h200.engine_max_num_batched_tokens) == (40, 8192)
    assert h200.engine_max_cudagraph_capture_size == 40 * 2 * 32
    monkeypatch.setenv("DGEMMA_ENGINE_GPU", "h200")
    monkeypatch.setenv("DGEMMA_ENGINE_MAX_NUM_SEQS", "48")
    from_env = EngineSettings()
    assert (from_env.engine_max_num_seqs, from_env.engine_max_cudagraph_capture_size) == (48, 48 * 2 * 32)
    assert from_env.engine_max_num_batched_tokens == 8192
    assert EngineSettings(engine_max_cudagraph_capture_size=0).engine_max_cudagraph_capture_size == 0
    # The cap passes neither what one step may batch nor the graph size that crashed at capture.
    assert graph_capture_size(48, 32, 2048) == 2048
    assert graph_capture_size(128, 32, 8192) == MAX_GRAPH_TOKENS < 8192


def test_the_h200_profile_is_sized_against_the_h200() -> None:
    """The measured batch (docs/engine-sizing-h200), against the H200's memory, not the L4's share."""
    # 48 seqs measured slower, 128 did not start: the l4's batch, in each of two engines.
    assert dataclasses.replace(SERVING["h200"], replicas=1) == SERVING["l4"]
    b = fit(EngineSettings(engine_gpu="h200"))
    check_fits(b)
    assert b.available_gib == pytest.approx(0.92 * 143771 / 1024)
    flags = vllm_flags(b)
    assert flags[flags.index("--max-num-seqs") + 1] == "32"
    assert flags[flags.index("--gpu-memory-utilization") + 1] == "0.92"
    assert int(flags[flags.index("--kv-cache-memory-bytes") + 1]) == int(b.kv_cache_gib * GiB)
    # What fits the H200 and not the L4: the fit says so for each.
    check_fits(fit(EngineSettings(engine_gpu="h200"), max_num_seqs=128))
    with pytest.raises(FitError, match="needs"):
        check_fits(fit(EngineSettings(), max_num_seqs=128))


def test_an_h200_runs_two_engines_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two engines on an H200 measured 1.20-1.38x one (docs/engine-sizing-h200, run 4): its profile's
    count in GPU mode; the CPU stack, other GPUs and an explicit count keep theirs."""
    assert EngineSettings(engine_mode="gpu", engine_gpu="h200").engine_replicas == 2
    assert EngineSettings(engine_mode="gpu", engine_gpu="h200", engine_replicas=1).engine_replicas == 1
    assert EngineSettings(engine_mode="gpu").engine_replicas == 1  # an L4 holds one
    assert EngineSettings(engine_gpu="h200").engine_replicas == 1  # the CPU stack: one engine
    monkeypatch.setenv("DGEMMA_ENGINE_MODE", "gpu")
    monkeypatch.setenv("DGEMMA_ENGINE_GPU", "h200")
    assert EngineSettings().engine_replicas == 2
    b = fit(EngineSettings())
    check_fits(b)
    assert (b.profile.replicas, b.engine_utilization) == (2, 0.46)
    monkeypatch.setenv("DGEMMA_ENGINE_REPLICAS", "1")
    assert EngineSettings().engine_replicas == 1


def test_fit_command_sizes_the_gpus_profile(capsys: pytest.CaptureFixture[str]) -> None:
    from deploy import cli

    assert cli.main(["fit", "--gpu", "h200", "--weights-mode", "baked"]) == 0
    out = capsys.readouterr().out
    assert "on h200" in out and "--max-num-seqs 32 " in out and " 1984 2048" in out  # the canvas sizes' last
    assert cli.main(["fit", "--max-num-seqs", "48", "--weights-mode", "baked"]) == 1  # over the L4's 0.92
    assert cli.main(["fit", "--gpu", "h200", "--max-num-seqs", "64", "--weights-mode", "baked"]) == 0
    out = capsys.readouterr().out
    assert "--max-num-seqs 64 " in out and " 2016 2048 2112 " in out and " 4032 4096" in out


def test_canvas_capture_sizes_cover_every_step_the_profile_makes() -> None:
    """Every step up to the cap pads to a size at most 8 tokens away up to 256, a canvas up to a full
    batch of reads, two canvases above; every full-batch denoising step (n reads x canvas) is exact."""
    sizes = canvas_capture_sizes(32, 32, 2048)
    assert len(sizes) == 75 < 147 and sizes[0] == 1 and sizes[-1] == 2048 and sizes == sorted(set(sizes))
    for step in range(1, 2049):
        padded = min(s for s in sizes if s >= step)
        assert padded - step < (8 if step <= 256 else 32 if step <= 1024 else 64)
    assert all(n * 32 in sizes for n in range(1, 33))
    assert canvas_capture_sizes(32, 32, 512)[-1] == 512 and max(canvas_capture_sizes(4, 32, 100)) == 100
    vllms_cap = EngineSettings(engine_cudagraph_sizes="canvas", engine_max_cudagraph_capture_size=0)
    assert (vllms_cap.capture_sizes() or [0])[-1] == 512  # 0: vLLM's own cap


def test_the_deploy_guide_lists_every_flag_the_fit_gives(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/deploy.md's L4 fit quotes the flags `dgemma fit` prints: each one, in its order, with its
    value (the graph sizes by their first and last)."""
    from pathlib import Path

    from deploy import cli

    assert cli.main(["fit", "--weights-mode", "baked"]) == 0
    printed = capsys.readouterr().out.split("vLLM flags: ", 1)[1].split("\n")[0].split()
    guide = " ".join((Path(__file__).resolve().parents[3] / "docs" / "deploy.md").read_text().split())
    start = guide.index("Flags: `") + len("Flags: `")
    quoted = guide[start : guide.index("`", start)].split()
    assert [f for f in quoted if f.startswith("--")] == [f for f in printed if f.startswith("--")], quoted
    sizes = printed.index("--cudagraph-capture-sizes")
    assert quoted[: sizes + 2] == printed[: sizes + 2] and quoted[-1] == printed[-1]
    b = budget(load_arch(BIG), ServingProfile())
    assert f"**{b.total_gib:.2f}**" in guide  # the table's total, as the fit computes it
