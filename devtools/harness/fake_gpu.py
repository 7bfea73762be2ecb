"""A scripted GPU host for testing `dgemma gpu-check`'s orchestration on a machine without one: a
`vllm` that prints a real start's log lines (vLLM 0.32 on an H200) and then serves the instant
stand-in of vLLM's HTTP surface, and an `nvidia-smi` that answers the queries the kit makes. It
proves the plumbing (the supervisor's GPU path, the gate, the report), never a GPU figure.

    python -m devtools.harness.fake_gpu vllm serve MODEL --port P --served-model-name NAME ...
    python -m devtools.harness.fake_gpu nvidia-smi --query-gpu=... --format=csv,noheader,nounits [-lms MS]

A start writes under $VLLM_CACHE_ROOT as vLLM compiles: the backbone's graph at a cold start, the
sampler's at the first start that restored it (the real first restored start recompiles the sampler).
State in $FAKE_GPU_DIR: `used` holds the MiB the fake engine occupies while it runs; the name and
size of the GPU come from $FAKE_GPU_NAME and $FAKE_GPU_MIB (default: an H200).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

# Lines of a real start (shared reference gpu-h200/vllm-cold-compile.log), as vLLM prints them.
START_LINES = (
    "Initializing a V1 LLM engine (v0.32.0) with config: model='{model}', enforce_eager=False",
    "Using MacheteLinearKernel for CompressedTensorsWNA16",
    "Using AttentionBackendEnum.TRITON_ATTN backend.",
    "Using 'MARLIN' WNA16 MoE backend.",
    "Loading weights took 5.65 seconds",
    "Using MarlinExperts",
    "Model loading took 14.06 GiB memory and 9.600556 seconds",
    "[backbone] Dynamo bytecode transform time: 20.31 s",
    "[backbone] torch.compile took 116.81 s in total",
    "[backbone] Initial profiling/warmup run took 41.15 s",
    "Initial free memory 139.29 GiB, reserved 2.26 GiB memory for KV Cache as specified by "
    "kv_cache_memory_bytes config and skipped memory profiling.",
    "GPU KV cache size: 10,454 tokens, Maximum concurrency for 512 tokens per request: 20.42x",
    "Graph capturing finished in 10 secs, took 0.46 GiB",
    "init engine (profile, create kv cache, warmup model) took 219.13 s (compilation: 116.81 s)",
)
ENGINE_MIB = 19083  # what the whole H200 held after that start


def _state() -> Path:
    return Path(os.environ["FAKE_GPU_DIR"]) / "used"


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def vllm(argv: list[str]) -> int:
    if argv[:1] != ["serve"]:
        print(f"fake vllm: only `serve` is scripted, not {argv}", file=sys.stderr)
        return 2
    from devtools.harness import instant_engine

    model, port = argv[1], int(_flag(argv, "--port"))
    name = _flag(argv, "--served-model-name")
    state = _state()

    def release(*_: object) -> None:
        state.unlink(missing_ok=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, release)
    if os.environ.get("VLLM_USE_FLASHINFER_SAMPLER") != "0":  # how the real one died on the H200
        print("ModuleNotFoundError: No module named 'flashinfer'\nEngine core initialization failed.")
        return 1
    cache = os.environ.get("VLLM_CACHE_ROOT")
    if cache:  # what compiling leaves, as the supervisor's compile-cache store saves and restores it:
        # the backbone at a cold start, the sampler at the first start that restored the backbone's
        compiled = Path(cache) / "torch_compile_cache"
        graph = "fake-sampler" if (compiled / "fake-backbone").exists() else "fake-backbone"
        compiled.mkdir(parents=True, exist_ok=True)
        (compiled / graph).write_text("a compiled graph, scripted\n")
    for i, line in enumerate(START_LINES):
        prefix = f"(EngineCore pid={os.getpid()}) INFO 12-01 07:41:{i:02d} [fake.py:1]"
        print(prefix, line.format(model=model), flush=True)
        if line.startswith("Model loading took"):
            state.write_text(str(int(os.environ.get("FAKE_GPU_ENGINE_MIB", ENGINE_MIB))))
        time.sleep(0.05)
    try:
        return instant_engine.main(["--port", str(port), "--model", name])
    finally:
        state.unlink(missing_ok=True)


def nvidia_smi(argv: list[str]) -> int:
    query = next((a.split("=", 1)[1] for a in argv if a.startswith("--query-gpu=")), "")
    name, total = os.environ.get("FAKE_GPU_NAME", "NVIDIA H200"), os.environ.get("FAKE_GPU_MIB", "143771")

    def line() -> str:
        used = _state().read_text() if _state().exists() else "0"
        fields = {"name": name, "memory.total": total, "memory.used": used, "driver_version": "580.159.03",
                  "utilization.gpu": "50" if used != "0" else "0"}  # fmt: skip
        return ", ".join(fields[f] for f in query.split(","))

    if "-lms" not in argv:
        print(line())
        return 0
    interval = int(_flag(argv, "-lms")) / 1000
    while True:
        print(line(), flush=True)
        time.sleep(interval)


def main() -> int:
    tool, argv = sys.argv[1], sys.argv[2:]
    return vllm(argv) if tool == "vllm" else nvidia_smi(argv)


if __name__ == "__main__":
    sys.exit(main())
