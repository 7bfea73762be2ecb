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
    from deploy.fit import GPUS

    parser.add_argument("checkpoint", type=Path, nargs="?", help="config.json or its directory")
    parser.add_argument("--gpu", choices=list(GPUS))
    parser.add_argument("--scheme", choices=["w4a16", "bf16"])
    parser.add_argument("--group-size", type=int)
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--canvas", type=int)
    parser.add_argument("--prompt-tokens", type=int)
    parser.add_argument("--gpu-memory-utilization", type=float)
    parser.add_argument(
        "--weights-mode",
        choices=["baked", "download", "gcs_fuse", "all"],
        default="all",
        help="the instance-memory side: how the checkpoint reaches the instance (default: all three)",
    )
    parser.add_argument(
        "--memory-gib", type=float, default=32.0, help="instance memory (Cloud Run: at most 32)"
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from app.config import load
    from deploy.fit import (
        BIG_CONFIG,
        WEIGHTS_MODES,
        FitError,
        check_fits,
        check_host_fits,
        checkpoint_bytes,
        fit,
        host_budget,
        vllm_flags,
    )
    from deploy.settings import EngineSettings

    b = fit(
        load(EngineSettings),
        args.checkpoint,
        gpu=args.gpu,
        scheme=args.scheme,
        group_size=args.group_size,
        max_num_seqs=args.max_num_seqs,
        canvas=args.canvas,
        prompt_tokens=args.prompt_tokens,
        gpu_memory_utilization=args.gpu_memory_utilization,
    )
    name = (args.checkpoint or BIG_CONFIG).name
    table = Table(title=f"{name} on {b.profile.gpu} (computed, not measured on the GPU)")
    table.add_column("item")
    table.add_column("GiB", justify="right")
    table.add_column("how")
    for item, gib, how in b.rows:
        table.add_row(item, f"{gib:.2f}", how)
    table.add_row("[bold]total[/]", f"[bold]{b.total_gib:.2f}[/]", f"available: {b.available_gib:.2f} GiB")
    console = Console()
    console.print(table)
    refusals = []
    try:
        check_fits(b)
    except FitError as e:
        refusals.append(f"does not fit the GPU: {e}")
    total, largest = checkpoint_bytes(b)
    modes = WEIGHTS_MODES if args.weights_mode == "all" else (args.weights_mode,)
    fitting = []
    for mode in modes:
        host = host_budget(mode, total, largest, args.memory_gib)
        table = Table(title=f"instance memory, weights mode {mode} ({total / 1e9:.1f} GB checkpoint)")
        for col in ("item", "GiB", "how"):
            table.add_column(col, justify="right" if col == "GiB" else "left")
        for item, gib, how in host.rows:
            table.add_row(item, f"{gib:.2f}", how)
        verdict = "fits" if host.fits else "[red]does not fit[/]"
        table.add_row(
            "[bold]total[/]", f"[bold]{host.total_gib:.2f}[/]", f"of {host.memory_gib:.0f} GiB: {verdict}"
        )
        console.print(table)
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
    if not fitting or (refusals[:1] and refusals[0].startswith("does not fit the GPU")):
        return 1  # the GPU, or every weights mode asked for, does not fit
    print("vLLM flags:", " ".join(vllm_flags(b)))
    return 0
