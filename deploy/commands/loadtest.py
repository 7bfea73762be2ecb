"""`dgemma loadtest`: the rollout gate (Locust latency + batch@32 phases against a profile)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "loadtest"
HELP = "the rollout gate: Locust latency + batch@32 phases vs a profile (exit 1 naming missed targets)"
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", required=True, help="gateway base URL")
    parser.add_argument("--profile", default="cpu-smoke", help="a profile of loadtest/profiles.toml")
    parser.add_argument("--out", type=Path, default=Path("reports/loadtest"), help="report directory")
    parser.add_argument("--engine-url", help="raw vLLM URL: adds the gateway-overhead phase")
    parser.add_argument(
        "--target", action="append", default=[], metavar="NAME=VALUE", help="override a limit"
    )
    parser.add_argument("--latency-seconds", type=int)
    parser.add_argument("--throughput-seconds", type=int)
    parser.add_argument(
        "--warmup-seconds", type=float, default=900, help="how long to wait for a ready service (cold start)"
    )


def run(args: argparse.Namespace) -> int:
    from app.config import load
    from loadtest.gate import Profile
    from loadtest.gate import run as gate
    from loadtest.settings import LoadtestSettings

    profile = Profile.load(args.profile).overridden(
        args.target, args.latency_seconds, args.throughput_seconds
    )
    missed = gate(
        args.host,
        profile,
        args.out,
        auth=load(LoadtestSettings),
        engine_url=args.engine_url,
        warmup_timeout_s=args.warmup_seconds,
    )
    return 1 if missed else 0
