"""`dgemma fit`: the GPU memory budget and vLLM flags of a checkpoint (computed, not measured)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "fit"
HELP = (
    "GPU memory budget and vLLM flags for a checkpoint (computed); defaults: the DGEMMA_ENGINE_* settings "
    "the supervisor uses, and the checkpoint's own quantization (the 26B-A4B as W4A16 g64 when no "
    "checkpoint is given). Exit 1 when it does not fit."
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


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from app.config import load
    from deploy.fit import BIG_CONFIG, FitError, check_fits, fit, vllm_flags
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
    try:
        check_fits(b)
    except FitError as e:
        Console(stderr=True, soft_wrap=True).print(f"[red]does not fit:[/] {e}")
        return 1
    print("vLLM flags:", " ".join(vllm_flags(b)))
    return 0
