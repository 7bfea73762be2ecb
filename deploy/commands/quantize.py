"""`dgemma quantize`: W4A16 (compressed-tensors) with every expert quantized."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

NAME = "quantize"
HELP = "W4A16 (compressed-tensors) with every expert quantized; runs with the engine's python"
REQUIRES: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--group-size", type=int, choices=[32, 64], default=64)


def run(args: argparse.Namespace) -> int:
    from app.core.config import load
    from deploy.models import SCRIPTS
    from deploy.models.checkpoints import check_quantize_source
    from deploy.runtime.settings import EngineSettings

    settings = load(EngineSettings)
    check_quantize_source(args.src, settings.engine_python)
    # torch and compressed-tensors live in the engine's environment; the report lands beside the weights.
    argv = [str(settings.engine_python), str(SCRIPTS / "quantize.py"), str(args.src), str(args.dst)]
    made = not args.dst.exists()
    code = subprocess.run([*argv, "--group-size", str(args.group_size)]).returncode
    if code != 0 and made and args.dst.is_dir() and not any(args.dst.iterdir()):
        args.dst.rmdir()  # a failed run leaves no empty folder to mistake for a checkpoint
    return code
