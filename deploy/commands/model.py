"""`dgemma model`: generate the tiny random-weight DiffusionGemma."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "model"
HELP = "generate the tiny random-weight DiffusionGemma (with the engine's python)"
REQUIRES: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", type=Path, nargs="?", help="default: DGEMMA_MODEL_DIR")


def run(args: argparse.Namespace) -> int:
    from app.config import load
    from deploy.devstack import ensure_tiny_model
    from deploy.settings import EngineSettings

    settings = load(EngineSettings)
    ensure_tiny_model(args.out_dir or settings.model_dir, settings.engine_python)
    return 0
