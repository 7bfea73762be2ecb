"""`dgemma eval`: accuracy, calibration and option-order figures of a deployment on labelled data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploy.commands import labelled

NAME = "eval"
HELP = "score a deployment on labelled JSONL: accuracy, ECE, Brier, reads, option-order flip rate per policy"
REQUIRES: tuple[str, ...] = ("matplotlib",)
POLICIES = ("single", "adaptive", "debias")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labelled.add_arguments(parser)
    parser.add_argument(
        "--policy",
        action="append",
        choices=POLICIES,
        help="a read policy to score (repeat; default: all three)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("reports/eval"), help="eval.json and reliability.png"
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from evals import data, report
    from evals.run import evaluate

    headers = labelled.headers(args)
    items = data.load(args.data, args.limit)
    policies = tuple(dict.fromkeys(args.policy or POLICIES))
    result = evaluate(
        args.url.rstrip("/"), items, policies, data=str(args.data), headers=headers,
        model=args.model, concurrency=args.concurrency,
    )  # fmt: skip
    console = Console(width=None if sys.stdout.isatty() else 120)  # a log keeps every column
    console.print(report.table(result))
    written = report.write(result, args.out)
    console.print(f"wrote {written[0]} and {written[1]}")
    return 0
