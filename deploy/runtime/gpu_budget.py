"""The GPU's memory fit: a DiffusionGemma config + quantization + serving profile -> budget and vLLM
flags (the supervisor sizes the engine with it; `deploy.cloud.host_budget` is the instance's side).

Every figure here is computed from the checkpoint's config.json and published GPU specs; none is
measured on an L4. The parameter inventory is exact for transformers' DiffusionGemma (checked
against a meta-device instantiation in the tests); the runtime items use the formulas in
`Budget.rows` and are labelled as estimates where they are.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app.core.errors import KitError

if TYPE_CHECKING:
    from deploy.runtime.settings import EngineSettings

GiB = 2**30
# The 26B-A4B text architecture (reconstructed from public configs): `dgemma fit` with no checkpoint.
BIG_CONFIG = Path(__file__).resolve().parents[1] / "models" / "diffusiongemma-26b-a4b.config.json"
Scheme = Literal["bf16", "w4a16"]
# What each GPU exposes to CUDA, in GiB (nvidia-smi's memory.total: L4 23,034 MiB; H100 SXM
# 81,559 MiB; H200 143,771 MiB, read on the H200 of docs/gpu-check-h200/README.md).
GPUS: dict[str, float] = {
    "l4": 23034 / 1024,
    "a100-40gb": 40960 / 1024 * 0.98,
    "h100-80gb": 81559 / 1024,
    "h200": 143771 / 1024,
}
# What nvidia-smi calls each GPU (its `name` field contains this).
GPU_NAMES: dict[str, str] = {"l4": "L4", "a100-40gb": "A100", "h100-80gb": "H100", "h200": "H200"}
CUDA_CONTEXT_GIB = 1.0
THOUGHT_TOKENS = 4  # "<|channel>thought\n<channel|>" sits between the prompt and the canvas


class FitError(KitError, ValueError):
    """The profile does not fit the GPU; the message says what to change."""

    exit_code = 2
    label = "cannot fit"


@dataclass(frozen=True)
class Arch:
    """The text model's shape, read from a DiffusionGemma config.json."""

    vocab: int
    hidden: int
    intermediate: int
    layer_types: tuple[str, ...]
    heads: int
    kv_heads: int
    head_dim: int
    global_kv_heads: int
    global_head_dim: int
    experts: int
    top_k: int
    moe_intermediate: int
    canvas: int

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Arch:
        t = config.get("text_config", config)
        layers = int(t["num_hidden_layers"])
        types = tuple(t.get("layer_types") or ["sliding_attention"] * (layers - 1) + ["full_attention"])
        # transformers 5.19 saves the full-attention layers' shape as per-layer overrides, not as
        # global_head_dim / num_global_key_value_heads (which published configs carry).
        per_layer = t.get("per_layer_config") or {}
        full: dict[str, Any] = next(
            (v for k, v in per_layer.items() if types[int(k)] == "full_attention"), {}
        )
        return cls(
            vocab=int(t["vocab_size"]),
            hidden=int(t["hidden_size"]),
            intermediate=int(t["intermediate_size"]),
            layer_types=types,
            heads=int(t["num_attention_heads"]),
            kv_heads=int(t["num_key_value_heads"]),
            head_dim=int(t["head_dim"]),
            global_kv_heads=int(
                t.get("num_global_key_value_heads")
                or full.get("num_key_value_heads")
                or t["num_key_value_heads"]
            ),
            global_head_dim=int(t.get("global_head_dim") or full.get("head_dim") or t["head_dim"]),
            experts=int(t["num_experts"]),
            top_k=int(t["top_k_experts"]),
            moe_intermediate=int(t["moe_intermediate_size"]),
            canvas=int(config.get("canvas_length", 256)),
        )

    def inventory(self) -> dict[str, int]:
        """Parameters by kind (text model, one copy of the weights the encoder and decoder share)."""
        h, inv = self.hidden, {"experts": 0, "dense_linear": 0, "embedding": self.vocab * self.hidden}
        small = 0  # routers, norms and scales: kept in bf16
        for kind in self.layer_types:
            if kind == "full_attention":
                # Full-attention layers have no v_proj (values are the keys).
                hd, kv = self.global_head_dim, self.global_kv_heads
                attn = h * self.heads * hd * 2 + h * kv * hd
            else:
                hd, kv = self.head_dim, self.kv_heads
                attn = h * self.heads * hd * 2 + h * kv * hd * 2
            inv["dense_linear"] += attn + 3 * h * self.intermediate
            inv["experts"] += self.experts * 3 * self.moe_intermediate * h  # gate_up (2x) + down
            router = self.experts * h + h + self.experts
            small += router + 2 * hd + 7 * h  # q/k norms, seven layer norms
        # The decoder's self-conditioning MLP: vLLM 0.32 builds it from plain nn.Linear, so it stays bf16.
        inv["self_conditioning"] = 3 * h * self.intermediate
        small += 2 * h  # final norm, self-conditioning pre-norm
        inv["router_norm"] = small
        return inv

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """K and V for every layer (vLLM caches both even where V equals K)."""
        total = 0
        for kind in self.layer_types:
            kv, hd = (
                (self.global_kv_heads, self.global_head_dim)
                if kind == "full_attention"
                else (self.kv_heads, self.head_dim)
            )
            total += 2 * kv * hd * dtype_bytes
        return total


def weight_bytes(arch: Arch, scheme: Scheme, group_size: int = 64) -> dict[str, float]:
    """Bytes by kind. W4A16: experts and dense linears at 4 bits + one bf16 scale per group."""
    inv = arch.inventory()
    if scheme == "bf16":
        return {k: v * 2.0 for k, v in inv.items()}
    if arch.moe_intermediate % group_size or arch.hidden % group_size:
        raise FitError(
            f"group size {group_size} does not divide the expert width {arch.moe_intermediate} "
            f"and hidden size {arch.hidden}; use 32 or 64"
        )
    per_weight = 0.5 + 2.0 / group_size
    return {
        "experts": inv["experts"] * per_weight,
        "dense_linear": inv["dense_linear"] * per_weight,
        "embedding": inv["embedding"] * 2.0,
        "self_conditioning": inv["self_conditioning"] * 2.0,
        "router_norm": inv["router_norm"] * 2.0,
    }


@dataclass(frozen=True)
class ServingProfile:
    """How vLLM serves decisions: the knobs that size GPU memory."""

    max_num_seqs: int = 32
    canvas: int = 32
    prompt_tokens: int = 300
    max_num_batched_tokens: int = 4096
    gpu: str = "l4"
    gpu_memory_utilization: float = 0.92
    scheme: Scheme = "w4a16"
    group_size: int = 64
    replicas: int = 1  # engines sharing the GPU: each is this profile, in 1/replicas of the share

    @property
    def max_model_len(self) -> int:
        need = self.prompt_tokens + THOUGHT_TOKENS + self.canvas
        return int(math.ceil(need / 256) * 256)


class Rows:
    """A memory budget as rows: (item, GiB, how the figure was had)."""

    rows: list[tuple[str, float, str]]

    @property
    def total_gib(self) -> float:
        return sum(gib for _, gib, _ in self.rows)


@dataclass
class Budget(Rows):
    arch: Arch
    profile: ServingProfile
    rows: list[tuple[str, float, str]] = field(default_factory=list)

    @property
    def available_gib(self) -> float:
        """One engine's memory: its share of the GPU's."""
        return GPUS[self.profile.gpu] * self.engine_utilization

    @property
    def engine_utilization(self) -> float:
        """The share of the GPU's memory one engine may use."""
        return round(self.profile.gpu_memory_utilization / self.profile.replicas, 4)

    @property
    def kv_cache_gib(self) -> float:
        return next(gib for item, gib, _ in self.rows if item == "KV cache")


def budget(arch: Arch, profile: ServingProfile) -> Budget:
    """The memory budget of one GPU for this model and profile (computed, not measured)."""
    p = profile
    if p.gpu not in GPUS:
        raise FitError(f"unknown GPU {p.gpu!r}; known: {', '.join(GPUS)}")
    if p.canvas < 16:
        raise FitError("vLLM's structured decisions need a canvas of at least 16 tokens")
    w = weight_bytes(arch, p.scheme, p.group_size)
    seq_tokens = p.prompt_tokens + THOUGHT_TOKENS + p.canvas
    b = Budget(arch, p)
    b.rows = [
        (
            "weights: experts",
            w["experts"] / GiB,
            f"{arch.inventory()['experts'] / 1e9:.2f}B params, {p.scheme}",
        ),
        ("weights: dense linears", w["dense_linear"] / GiB, f"attention and MLP; {p.scheme}"),
        ("weights: embedding (tied lm_head)", w["embedding"] / GiB, "bf16"),
        (
            "weights: self-conditioning, routers, norms",
            (w["self_conditioning"] + w["router_norm"]) / GiB,
            "bf16",
        ),
        (
            "KV cache",
            p.max_num_seqs * seq_tokens * arch.kv_bytes_per_token() / GiB,
            f"{p.max_num_seqs} seqs x {seq_tokens} tokens x {arch.kv_bytes_per_token() // 1024} KiB",
        ),
        (
            "sampler fp32 buffer",
            p.max_num_seqs * p.canvas * arch.vocab * 4 / GiB,
            f"{p.max_num_seqs} x {p.canvas} canvas x {arch.vocab} vocab x 4 B",
        ),
        (
            "canvas logits (transient, estimate)",
            p.max_num_seqs * p.canvas * arch.vocab * 6 / GiB,
            "bf16 logits + fp32 probabilities over the canvas",
        ),
        (
            "activations (estimate)",
            p.max_num_batched_tokens * (arch.top_k * 2 * arch.moe_intermediate + 4 * arch.hidden) * 2 / GiB,
            f"{p.max_num_batched_tokens} batched tokens through top-{arch.top_k} experts",
        ),
        ("CUDA context + workspace (estimate)", CUDA_CONTEXT_GIB, "typical"),
    ]
    return b


def check_gpu(profile: ServingProfile, found: tuple[str, float] | None, *, on_larger: bool = False) -> str:
    """Refuse a profile sized for another GPU than the one this instance has; with `on_larger`,
    accept any GPU with at least the profile's memory (the profile's budget measured on a larger
    GPU). Says what was accepted."""
    if found is None:
        raise FitError(
            f"no NVIDIA GPU visible (nvidia-smi found nothing), but the fit profile sizes vLLM for "
            f"{profile.gpu}: run with a GPU, or DGEMMA_ENGINE_MODE=cpu"
        )
    name, gib = found
    expected = GPUS[profile.gpu]
    if GPU_NAMES[profile.gpu] in name and abs(gib - expected) <= 0.05 * expected:
        return f"{name} ({gib:.1f} GiB) is the {profile.gpu} the profile sizes"
    if on_larger and gib >= expected:
        return (
            f"{name} ({gib:.1f} GiB) serves the {profile.gpu} profile, held to the {profile.gpu}'s "
            f"{expected:.1f} GiB (DGEMMA_ENGINE_ON_LARGER_GPU)"
        )
    if on_larger:
        raise FitError(
            f"this instance has a {name} with {gib:.1f} GiB, less than the {expected:.1f} GiB of the "
            f"{profile.gpu} the profile sizes: it cannot stand in for it"
        )
    raise FitError(
        f"this instance has a {name} with {gib:.1f} GiB, but the fit profile sizes vLLM for "
        f"{profile.gpu} ({expected:.1f} GiB): set DGEMMA_ENGINE_GPU to the GPU it runs on, or "
        f"DGEMMA_ENGINE_ON_LARGER_GPU=true to measure the {profile.gpu} profile on this larger GPU"
    )


def check_fits(b: Budget) -> None:
    if b.total_gib > b.available_gib:
        biggest = sorted(b.rows, key=lambda r: -r[1])[:3]
        shared = (
            f" to each of {b.profile.replicas} engines (engine_replicas)" if b.profile.replicas > 1 else ""
        )
        raise FitError(
            f"needs {b.total_gib:.1f} GiB but {b.profile.gpu} gives {b.available_gib:.1f} GiB{shared} at "
            f"gpu_memory_utilization {b.profile.gpu_memory_utilization}; largest: "
            + ", ".join(f"{item} {gib:.1f} GiB" for item, gib, _ in biggest)
            + ". Lower max_num_seqs, canvas or prompt tokens"
            + (", or engine_replicas" if b.profile.replicas > 1 else "")
            + ", or use a larger GPU."
        )


def vllm_flags(b: Budget, host_gpu_gib: float | None = None) -> list[str]:
    """The flags that size vLLM to this budget (the supervisor adds model, names, host, port).
    `host_gpu_gib`: the memory of a larger GPU that serves this profile; vLLM's utilization is
    scaled so that what it asks for is this budget's GPU's share, not the larger one's."""
    p = b.profile
    utilization = b.engine_utilization
    if host_gpu_gib is not None and host_gpu_gib > GPUS[p.gpu]:
        utilization = round(b.available_gib / host_gpu_gib, 4)
    return [
        "--max-num-seqs", str(p.max_num_seqs),
        "--max-model-len", str(p.max_model_len),
        "--max-num-batched-tokens", str(max(p.max_num_batched_tokens, p.max_model_len)),
        "--diffusion-config", json.dumps({"canvas_length": p.canvas}),
        "--kv-cache-memory-bytes", str(int(b.kv_cache_gib * GiB)),
        "--gpu-memory-utilization", str(utilization),
    ]  # fmt: skip


def scheduling_flags(engine: EngineSettings) -> list[str]:
    """How the GPU engine schedules and runs its steps (nothing the memory fit sizes)."""
    flags = ["--async-scheduling" if engine.engine_async_scheduling else "--no-async-scheduling"]
    sizes = engine.capture_sizes()
    if sizes:  # vLLM refuses a cap that is not the list's largest size: the list alone says both
        flags += ["--cudagraph-capture-sizes", *map(str, sizes)]
    elif engine.engine_max_cudagraph_capture_size:  # 0: vLLM's own cap
        flags += ["--max-cudagraph-capture-size", str(engine.engine_max_cudagraph_capture_size)]
    if engine.engine_load_format != "auto":
        flags += ["--load-format", engine.engine_load_format]
    return flags


def load_config(path: Path) -> dict[str, Any]:
    """A checkpoint's config.json, given the file or its directory."""
    config_path = path / "config.json" if path.is_dir() else path
    data: dict[str, Any] = json.loads(config_path.read_text())
    return data


def load_arch(path: Path) -> Arch:
    return Arch.from_config(load_config(path))


def quantization_of(config: dict[str, Any]) -> tuple[Scheme, int]:
    """(scheme, group size) a checkpoint declares: W4A16 compressed-tensors, or bf16."""
    quant = config.get("quantization_config")
    if not quant:
        return "bf16", 64
    groups: dict[str, dict[str, Any]] = quant.get("config_groups") or {}
    first: dict[str, Any] = next(iter(groups.values()), {})
    weights: dict[str, Any] = first.get("weights") or {}
    return "w4a16", int(weights.get("group_size") or 64)


def profile_for(settings: EngineSettings, config: dict[str, Any]) -> ServingProfile:
    """The serving profile the settings ask for, with the checkpoint's own quantization."""
    scheme, group_size = quantization_of(config)
    return ServingProfile(
        max_num_seqs=settings.engine_max_num_seqs,
        canvas=settings.engine_canvas,
        prompt_tokens=settings.engine_prompt_tokens,
        max_num_batched_tokens=settings.engine_max_num_batched_tokens,
        gpu=settings.engine_gpu,
        gpu_memory_utilization=settings.engine_gpu_memory_utilization,
        scheme=scheme,
        group_size=group_size,
        replicas=settings.engine_replicas,
    )


def fit(settings: EngineSettings, checkpoint: Path | None = None, **overrides: Any) -> Budget:
    """The budget of a checkpoint (default: the 26B-A4B as W4A16 g64) under the engine settings,
    with `ServingProfile` fields overridden where given (None: not given). Raises FitError on a profile
    it cannot size; whether it fits is `check_fits`'s question."""
    config = load_config(checkpoint or BIG_CONFIG)
    given = {k: v for k, v in overrides.items() if v is not None}
    if checkpoint is None:  # the unquantized 26B-A4B config: size the published W4A16 recipe
        given = {"scheme": "w4a16", "group_size": 64} | given
    profile = dataclasses.replace(profile_for(settings, config), **given)
    return budget(Arch.from_config(config), profile)
