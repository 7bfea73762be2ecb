"""`dgemma gpu-check`: does the kit start, fit and meet its targets on this GPU? (a GPU host with vLLM)"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "gpu-check"
HELP = (
    "on a GPU host with vLLM's CUDA build: start the kit as the image does (cold, then warm compile "
    "caches; with --compile-cache-store: cold, restored, then steady, the start most instances see), "
    "run the load-test gate through the gateway on the cold start, measure memory against the profile's GPU; "
    "writes report.md, report.json and gpu-check.png. Exit 1 when it does not start, fit or meet the gate"
)
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from deploy.runtime.gpu_budget import GPUS

    parser.add_argument(
        "model", type=Path, help="a checkpoint with a manifest (`dgemma model random DIR` makes one)"
    )
    parser.add_argument("--out", type=Path, default=Path("reports/gpu-check"), help="report directory")
    parser.add_argument(
        "--gpu", choices=list(GPUS), default="l4",
        help="the serving profile's GPU; on a larger GPU, the profile is held to its memory (default: l4)",
    )  # fmt: skip
    parser.add_argument(
        "--gate-profile", default="l4", help="a profile of loadtest/profiles.toml (default: l4)"
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(".cache/gpu-check/compile"),
        help="the compile caches the check owns (emptied first: the first start is cold)",
    )  # fmt: skip
    parser.add_argument(
        "--compile-cache-store", type=Path,
        help="a directory as the supervisor's compile-cache store (emptied first): the first start "
        "saves its caches there, the second restores them and saves their second generation, the third "
        "(steady) restores that, as a revision's later instances do",
    )  # fmt: skip
    parser.add_argument("--latency-seconds", type=int, help="override the gate profile's latency phase")
    parser.add_argument("--throughput-seconds", type=int, help="override the gate profile's batch phase")


def run(args: argparse.Namespace) -> int:
    from deploy.gpucheck.check import Options
    from deploy.gpucheck.check import run as check

    result = check(
        Options(
            model=args.model,
            out=args.out,
            profile_gpu=args.gpu,
            gate_profile=args.gate_profile,
            cache_dir=args.cache_dir,
            cache_store=args.compile_cache_store,
            latency_seconds=args.latency_seconds,
            throughput_seconds=args.throughput_seconds,
        )
    )
    print((args.out / "report.md").read_text())
    return 1 if result.verdict else 0
