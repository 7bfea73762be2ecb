"""`dgemma eval`: accuracy, calibration and option-order figures of a deployment on labelled data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploy.auth import MODES

NAME = "eval"
HELP = "score a deployment on labelled JSONL: accuracy, ECE, Brier, reads, option-order flip rate per policy"
REQUIRES: tuple[str, ...] = ("matplotlib",)
POLICIES = ("single", "adaptive", "debias")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="labelled JSONL (README, Eval)")
    parser.add_argument("--url", required=True, help="gateway base URL")
    parser.add_argument(
        "--policy",
        action="append",
        choices=POLICIES,
        help="a read policy to score (repeat; default: all three)",
    )
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument("--model", help="model name to ask for (default: the first of /v1/models)")
    parser.add_argument("--concurrency", type=int, default=4, help="decisions in flight (default: 4)")
    parser.add_argument(
        "--out", type=Path, default=Path("reports/eval"), help="eval.json and reliability.png"
    )
    parser.add_argument(
        "--id-token",
        choices=MODES,
        default="off",
        help="also send a Google ID token (a private Cloud Run service)",
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from app.config import ConfigError, load
    from app.identity import audience_of
    from deploy.auth import id_tokens
    from evals import data, report
    from evals.run import evaluate
    from evals.settings import EvalSettings

    if (args.limit is not None and args.limit < 1) or args.concurrency < 1:
        raise ConfigError("--limit and --concurrency must be at least 1")
    settings = load(EvalSettings)
    headers = {"Authorization": f"Bearer {settings.api_key()}"}
    if args.id_token != "off":
        headers = id_tokens(args.id_token).headers(audience_of(args.url), settings.api_key())
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
