"""The `dgemma` subcommands, one module each.

A command module (its `NAME` with `-` spelled `_`) has `NAME`, `HELP`, `REQUIRES` (modules it needs
beyond the image's lock), optionally `OPTIONAL` (modules beyond the lock it uses only when installed,
saying so when not: plots), `add_arguments(parser)` and `run(args) -> int`; `SERVICE = True` marks a
long-running process that logs JSON lines. `run` parses nothing and calls into the room that does
the work; its errors subclass `app.core.errors.KitError`, which carries the exit code (deploy/cli.py).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from types import ModuleType
from typing import Protocol, cast

NAMES = (
    *("dev", "run", "serve", "model", "toy", "fit", "weights", "quantize", "loadtest", "eval", "calibrate"),
    *("deploy", "rollback", "destroy", "keys", "alerts", "gpu-check"),
)


class Command(Protocol):
    NAME: str
    HELP: str
    REQUIRES: tuple[str, ...]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def all_commands() -> list[Command]:
    return [cast(Command, importlib.import_module(f"deploy.commands.{module(name)}")) for name in NAMES]


def module(name: str) -> str:
    """A command's module: its name, `-` spelled `_` (`gpu-check` lives in `gpu_check.py`)."""
    return name.replace("-", "_")


def missing(command: Command | ModuleType) -> list[str]:
    """The modules a command needs that this installation lacks."""
    return [m for m in getattr(command, "REQUIRES", ()) if importlib.util.find_spec(m) is None]
