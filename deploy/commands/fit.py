"""`dgemma fit`: the GPU memory budget and vLLM flags of a checkpoint (computed, not measured)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "fit"
HELP = (
    "GPU and instance memory budgets and vLLM flags for a checkpoint (computed); defaults: the "
    "DGEMMA_ENGINE_* settings the supervisor uses, and the checkpoint's own quantization (the 26B-A4B as "
    "W4A16 g64 when no checkpoint is given). Exit 1 when the GPU or the chosen weights mode does not fit."
)
REQUIRES: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from deploy.runtime.gpu_budget import GPUS
    from deploy.runtime.settings import WEIGHTS_MODES

    parser.add_argument("checkpoint", type=Path, nargs="?", help="config.json or its directory")
    parser.add_argument("--gpu", choices=list(GPUS))
    parser.add_argument("--scheme", choices=["w4a16", "bf16"])
    parser.add_argument("--group-size", type=int)
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--max-num-batched-tokens", type=int)
    parser.add_argument("--canvas", type=int)
    parser.add_argument("--prompt-tokens", type=int)
    parser.add_argument("--gpu-memory-utilization", type=float)
    parser.add_argument("--replicas", type=int, help="engines sharing the GPU (DGEMMA_ENGINE_REPLICAS)")
    parser.add_argument(
        "--weights-mode",
        choices=[*WEIGHTS_MODES, "all"],
        default="all",
        help="the instance-memory side: how the checkpoint reaches the instance (default: all three)",
    )
    parser.add_argument(
        "--memory-gib", type=_positive, help="instance memory (default: Cloud Run's most, 32)"
    )


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from app.core.config import ConfigError, load
    from deploy.cloud.host_budget import (
        INSTANCE_MEMORY_GIB,
        check_host_fits,
        checkpoint_bytes,
        host_budget,
    )
    from deploy.runtime.gpu_budget import BIG_CONFIG, FitError, check_fits, fit, scheduling_flags, vllm_flags
    from deploy.runtime.settings import WEIGHTS_MODES, EngineSettings

    # The GPU and batch as settings: what they leave unset follows the GPU's serving profile, as at
    # start. The shape flags override the profile itself, so the fit says why one cannot be sized.
    settings = load(
        EngineSettings,
        engine_gpu=args.gpu,
        engine_max_num_seqs=args.max_num_seqs,
        engine_max_num_batched_tokens=args.max_num_batched_tokens,
        engine_gpu_memory_utilization=args.gpu_memory_utilization,
        engine_replicas=args.replicas,
        engine_mode="gpu",  # the fit sizes the GPU engine, whatever the local stack runs
    )
    if args.checkpoint is not None:
        config = args.checkpoint / "config.json" if args.checkpoint.is_dir() else args.checkpoint
        if not config.is_file():
            raise ConfigError(
                f"{args.checkpoint}: no config.json there (a checkpoint's folder or its config.json)"
            )
    b = fit(
        settings,
        args.checkpoint,
        scheme=args.scheme,
        group_size=args.group_size,
        canvas=args.canvas,
        prompt_tokens=args.prompt_tokens,
    )

    def table(title: str, rows: list[tuple[str, float, str]], total: float, against: str) -> Table:
        t = Table(title=title)
        for col in ("item", "GiB", "how"):
            t.add_column(col, justify="right" if col == "GiB" else "left")
        for item, gib, how in rows:
            t.add_row(item, f"{gib:.2f}", how)
        t.add_row("[bold]total[/]", f"[bold]{total:.2f}[/]", against)
        return t

    name = (args.checkpoint or BIG_CONFIG).name
    console = Console()
    title = f"{name} on {b.profile.gpu} (computed, not measured on the GPU)"
    if b.profile.replicas > 1:
        title += f": each of {b.profile.replicas} engines, {b.engine_utilization} of the GPU"
    console.print(table(title, b.rows, b.total_gib, f"available: {b.available_gib:.2f} GiB"))
    refusals = []
    try:
        check_fits(b)
        gpu_fits = True
    except FitError as e:
        refusals.append(f"does not fit the GPU: {e}")
        gpu_fits = False
    total, largest = checkpoint_bytes(b)
    modes = WEIGHTS_MODES if args.weights_mode == "all" else (args.weights_mode,)
    fitting = []
    for mode in modes:
        host = host_budget(mode, total, largest, args.memory_gib or INSTANCE_MEMORY_GIB)
        verdict = "fits" if host.fits else "[red]does not fit[/]"
        title = f"instance memory, weights mode {mode} ({total / 1e9:.1f} GB checkpoint)"
        against = f"of {host.memory_gib:.0f} GiB: {verdict}"
        console.print(table(title, host.rows, host.total_gib, against))
        try:
            check_host_fits(host)
            fitting.append(mode)
        except FitError as e:
            refusals.append(str(e))
    if fitting and args.weights_mode == "all":
        console.print(f"default weights mode (the fastest start that fits): {fitting[0]}")
    stderr = Console(stderr=True, soft_wrap=True)
    for refusal in refusals:
        stderr.print(refusal, style="red", markup=False)
    if not gpu_fits or not fitting:
        return 1  # the GPU, or every weights mode asked for, does not fit
    print("vLLM flags:", " ".join([*vllm_flags(b), *scheduling_flags(settings)]))
    return 0
