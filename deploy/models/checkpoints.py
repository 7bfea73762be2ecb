"""Checkpoints made here rather than downloaded: the full-size DiffusionGemma with random weights in
the W4A16 layout (`dgemma model random`), for memory and speed on a GPU before anyone downloads
52 GB. The generator runs with the engine's python (torch, transformers); the checkpoint is then
sealed (manifest, stamp, read-only) so that `dgemma run` checks it as it checks baked weights.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from app.core.config import ConfigError
from deploy.models import SCRIPTS, TOY_DIR
from deploy.runtime.gpu_budget import BIG_CONFIG
from deploy.runtime.tensors import read_tensors


def random_checkpoint(
    out: Path,
    engine_python: Path,
    *,
    config: Path = BIG_CONFIG,
    tokenizer: Path = TOY_DIR,
    group_size: int = 64,
    canvas: int = 32,
    seed: int = 0,
) -> dict[str, Any]:
    """Generate and seal; the generator's summary (parameters, bytes, seconds) plus the seal's time.
    Refuses a directory that already holds a checkpoint."""
    if (out / "config.json").exists():
        raise ConfigError(f"{out} already holds a checkpoint; choose an empty directory")
    argv = [
        str(engine_python), str(SCRIPTS / "random_model.py"), str(config), str(tokenizer), str(out),
        "--group-size", str(group_size), "--canvas", str(canvas), "--seed", str(seed),
    ]  # fmt: skip
    done = subprocess.run(argv)  # its progress lines reach the terminal as they come
    if done.returncode != 0:
        raise ConfigError(f"generating the random checkpoint in {out} failed (exit {done.returncode})")
    summary: dict[str, Any] = json.loads((out / "random_model.json").read_text())
    from deploy.runtime.weights import seal

    started = time.monotonic()
    seal(out)
    summary["seal_seconds"] = round(time.monotonic() - started, 1)
    return summary


def check_quantize_source(src: Path, engine_python: Path) -> None:
    """What would otherwise fail after minutes of work, or as a traceback: said first, on one line."""
    if not (src / "config.json").is_file():
        raise ConfigError(f"{src} is not a checkpoint: no config.json (the bf16 model, as downloaded)")
    if not any(src.glob("*.safetensors")):
        raise ConfigError(f"{src} holds no .safetensors files")
    try:  # each shard's header, as the quantizer's safetensors would read it (no output made yet)
        read_tensors(src)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{src} is not a readable checkpoint: {e}") from e
    if not engine_python.is_file():
        raise ConfigError(
            f"no engine python at {engine_python} (DGEMMA_ENGINE_PYTHON; relative to where you run): "
            "run from the checkout after `make engine-env`, or set it"
        )
