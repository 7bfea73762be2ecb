"""`dgemma calibrate`: temperatures fitted on labelled data through a deployment, for the gateway."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploy.commands import labelled

NAME = "calibrate"
HELP = "fit temperature scaling on labelled JSONL through a deployment: calibration.json + before/after"
REQUIRES: tuple[str, ...] = ("matplotlib",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labelled.add_arguments(parser)
    parser.add_argument(
        "--out", type=Path, default=Path("calibration.json"), help="the calibration file to write"
    )
    parser.add_argument(
        "--plot", type=Path, help="reliability diagram before/after (default: --out with .png)"
    )
    parser.add_argument(
        "--policy",
        choices=("single", "adaptive", "debias"),
        help="read policy to fit under (default: the deployment's); the gateway must serve it",
    )
    parser.add_argument(
        "--dev-share", type=float, default=0.5, help="share of items the fit sees (default: 0.5)"
    )
    parser.add_argument(
        "--min-samples",
        type=int,
        default=50,
        help="dev answers a question name needs for its own temperature (default: 50)",
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from app.core.config import ConfigError
    from evals import data, report
    from evals.calibrate import calibrate

    if not 0.0 < args.dev_share < 1.0:
        raise ConfigError("--dev-share must be between 0 and 1 (both splits need items)")
    if args.min_samples < 1:
        raise ConfigError("--min-samples must be at least 1")
    headers = labelled.headers(args)
    items = data.load(args.data, args.limit)
    result = calibrate(
        args.url.rstrip("/"), items, data=args.data, headers=headers, policy=args.policy,
        model=args.model, dev_share=args.dev_share, min_samples=args.min_samples,
        concurrency=args.concurrency,
    )  # fmt: skip
    console = Console(width=None if sys.stdout.isatty() else 120)  # a log keeps every column
    console.print(report.calibration_table(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(result.calibration.model_dump_json(indent=1) + "\n")
    plot = args.plot or args.out.with_suffix(".png")
    report.calibration_diagram(result, plot)
    console.print(f"wrote {args.out} and {plot}; serve it with DGEMMA_CALIBRATION_FILE={args.out}")
    return 0
