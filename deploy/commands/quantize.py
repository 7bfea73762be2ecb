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
    from deploy.runtime.settings import EngineSettings

    settings = load(EngineSettings)
    check(args.src, settings.engine_python)
    # torch and compressed-tensors live in the engine's environment; the report lands beside the weights.
    argv = [str(settings.engine_python), str(SCRIPTS / "quantize.py"), str(args.src), str(args.dst)]
    return subprocess.run([*argv, "--group-size", str(args.group_size)]).returncode


def check(src: Path, engine_python: Path) -> None:
    """What would otherwise fail after minutes of work, or as a traceback: said first, on one line."""
    from app.core.config import ConfigError

    if not (src / "config.json").is_file():
        raise ConfigError(f"{src} is not a checkpoint: no config.json (the bf16 model, as downloaded)")
    if not any(src.glob("*.safetensors")):
        raise ConfigError(f"{src} holds no .safetensors files")
    if not engine_python.is_file():
        raise ConfigError(
            f"no engine python at {engine_python} (DGEMMA_ENGINE_PYTHON; relative to where you run): "
            "run from the checkout after `make engine-env`, or set it"
        )
