"""`dgemma toy train|data`: retrain the toy model, or write a split of its task as eval JSONL."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "toy"
HELP = "the toy model's task: retrain it (engine python, ~27 min on 2 cores) or write a split as eval JSONL"
REQUIRES: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    train = actions.add_parser("train", help="train the toy DiffusionGemma into OUT_DIR (from a checkout)")
    train.add_argument("out_dir", type=Path, help="the shipped one: deploy/models/dgemma-toy-alerts")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument(
        "--threads", type=int, default=2, help="torch threads (the same count, the same weights)"
    )
    train.add_argument(
        "--time-limit", type=float, help="a safety net: stop and save after this many seconds (default 1740)"
    )
    train.add_argument("--steps", type=int, help="the schedule's length in steps (default 1900)")
    train.add_argument(
        "--mix", type=Path, help="a partial weights.toml laid over the corpus's data (toy sweeps)"
    )
    train.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where it trains (cpu)")
    data = actions.add_parser("data", help="a split of the synthetic alert task as eval JSONL (stdout)")
    data.add_argument("--split", choices=("train", "dev", "test"), default="test")
    data.add_argument("-n", type=int, default=300, help="how many alerts (default 300)")


def run(args: argparse.Namespace) -> int:
    import subprocess

    from app.core.config import ConfigError, load
    from deploy.devstack.stack import ensure_engine_env, toy_task
    from deploy.models import SCRIPTS
    from deploy.runtime.settings import EngineSettings

    if args.action == "data":
        if args.n < 1:
            raise ConfigError("-n must be at least 1")
        sys.stdout.write(toy_task().eval_jsonl(args.split, args.n))
        return 0
    trainer = SCRIPTS / "train_toy.py"
    if not trainer.is_file():  # pyproject.toml's exclude-package-data: the wheel and images lack it
        raise ConfigError(
            "`dgemma toy train` runs deploy/models/scripts/train_toy.py and its alert_corpus/, which an "
            "installed kit does not carry: run it from a checkout (make env)"
        )
    settings = load(EngineSettings)
    ensure_engine_env(settings.engine_python)
    argv = [str(settings.engine_python), str(trainer), str(args.out_dir),
            "--seed", str(args.seed), "--threads", str(args.threads)]  # fmt: skip
    if args.time_limit is not None:
        argv += ["--time-limit", str(args.time_limit)]
    if args.steps is not None:
        argv += ["--steps", str(args.steps)]
    if args.mix is not None:
        if not args.mix.is_file():
            raise ConfigError(f"--mix {args.mix}: no such file")
        argv += ["--mix", str(args.mix.resolve())]
    argv += ["--device", args.device]
    return subprocess.run(argv).returncode
