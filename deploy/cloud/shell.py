"""The deploy's one way to act: every command (gcloud, terraform, git), every file it writes and
every other effect (an upload, an HTTP call) goes through `Shell`, which does it, or in a dry run
prints it and does nothing. So the dry run prints what the real run would do, from the same code."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rich.console import Console

from deploy.errors import DeployError

T = TypeVar("T")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str = ""


class Shell:
    """Runs the deploy's commands (their output goes to `deploy.log`), or prints them in a dry run."""

    def __init__(self, console: Console, directory: Path, *, dry_run: bool) -> None:
        self.console = console
        self.dry_run = dry_run
        self.directory = directory
        self.commands: list[list[str]] = []  # everything run or printed, in order

    def run(
        self,
        argv: list[str],
        *,
        reads: str = "",
        stdin: str | None = None,
        check: bool = True,
        cwd: Path | None = None,
    ) -> Result:
        """Run `argv`; `reads` names what its output is used for (shown as a placeholder in a dry run)."""
        self.commands.append(argv)
        if self.dry_run:
            self.console.print(
                f"$ {shlex.join(argv)}" + (f"   # reads {reads}" if reads else ""), markup=False
            )
            return Result(0, f"<{reads}>" if reads else "")
        started = time.monotonic()
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=cwd)
        with (self.directory / "deploy.log").open("a") as log:
            log.write(
                f"$ {shlex.join(argv)}   # exit {done.returncode} in {time.monotonic() - started:.1f} s\n"
            )
            log.write(done.stdout[-20000:] + done.stderr[-20000:] + "\n")
        if check and done.returncode != 0:
            command = [a for a in argv if "=" not in a or a.startswith("-")][:4]  # without `env X=1`
            raise DeployError(
                f"`{shlex.join(command)} ...` failed (exit {done.returncode}): {done.stderr.strip()[-1500:]}"
            )
        return Result(done.returncode, done.stdout, done.stderr)

    def write(self, path: Path, text: str) -> None:
        if self.dry_run:
            self.console.print(f"--- {path}", markup=False)
            self.console.print(text, markup=False)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def call(self, what: str, action: Callable[[], T], placeholder: T) -> T:
        """An effect that is not a command (a GCS upload, an HTTP call): `action()`, or in a dry run
        `what` printed and `placeholder` returned. The description sits beside the action it names."""
        if self.dry_run:
            self.console.print(f"# {what}", markup=False)
            return placeholder
        return action()

    def note(self, text: str) -> None:
        """Why the next commands run, or the condition they run on; said in a dry run only."""
        if self.dry_run:
            self.console.print(f"# {text}", markup=False)
