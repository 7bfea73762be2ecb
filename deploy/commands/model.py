"""`dgemma model`: checkpoints made here: the tiny random model of the local stack, or a DiffusionGemma
of any size with random weights in the W4A16 layout (the full 26B-A4B by default)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "model"
HELP = "make a checkpoint: the local stack's tiny random model (tiny), or a full-size W4A16 one (random)"
REQUIRES: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from deploy.models import TOY_DIR
    from deploy.runtime.gpu_budget import BIG_CONFIG

    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    tiny = kinds.add_parser("tiny", help="the tiny random-weight DiffusionGemma the local stack serves")
    tiny.add_argument("out_dir", type=Path, nargs="?", help="default: DGEMMA_MODEL_DIR")
    random = kinds.add_parser(
        "random",
        help="a DiffusionGemma with random weights in the layout `dgemma quantize` writes, sealed as baked "
        "weights (manifest, stamp, read-only): memory and speed on a GPU, never answers. About 14.5 GB for "
        "the 26B-A4B; seconds on a GPU",
    )
    random.add_argument("out_dir", type=Path, help="an empty directory")
    random.add_argument("--config", type=Path, default=BIG_CONFIG, help="architecture (default: the 26B-A4B)")
    random.add_argument(
        "--tokenizer", type=Path, default=TOY_DIR, help="tokenizer files (default: the toy's)"
    )
    random.add_argument("--group-size", type=int, choices=[32, 64], default=64)
    random.add_argument(
        "--canvas", type=int, help="canvas_length in config.json (default: DGEMMA_ENGINE_CANVAS)"
    )
    random.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from app.core.config import load
    from deploy.runtime.settings import EngineSettings

    settings = load(EngineSettings)
    if args.kind == "tiny":
        from deploy.devstack.stack import ensure_tiny_model

        ensure_tiny_model(args.out_dir or settings.model_dir, settings.engine_python)
        return 0
    from rich.console import Console

    from deploy.models.checkpoints import random_checkpoint

    summary = random_checkpoint(
        args.out_dir,
        settings.engine_python,
        config=args.config,
        tokenizer=args.tokenizer,
        group_size=args.group_size,
        canvas=args.canvas or settings.engine_canvas,
        seed=args.seed,
    )
    params, gb = sum(summary["params"].values()) / 1e9, summary["bytes"] / 1e9
    Console().print(
        f"{args.out_dir}: {params:.2f}B parameters, {gb:.2f} GB "
        f"in {summary['files']} files, made in {summary['seconds']:.0f} s on {summary['device']}, sealed in "
        f"{summary['seal_seconds']:.0f} s. Random weights: figures of memory and speed, never of answers."
    )
    return 0
