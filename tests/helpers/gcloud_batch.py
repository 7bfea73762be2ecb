"""Runs many gcloud commands in one gcloud process: the real CLI tree, built once.

Run by gcloud's own Python (tests/helpers/gcloud.py): reads a JSON list of argument lists on stdin and
writes, for each, its exit status and what it printed, as JSON on the original stdout. Each command
writes to its own files (file descriptors 1 and 2 moved there), so nothing of one reaches another."""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from typing import Any


def _cli(sdk: str) -> Any:
    """gcloud's CLI as its launcher (lib/gcloud.py) builds it: its path order, its `google` package."""
    sys.path.insert(0, os.path.join(sdk, "lib"))
    launcher: Any = importlib.import_module("gcloud")
    sys.path = launcher.reorder_sys_path(sys.path)
    launcher._fix_google_module()
    return importlib.import_module("googlecloudsdk.gcloud_main").CreateCLI([])


def _run(cli: Any, args: list[str], folder: str) -> dict[str, Any]:
    """One command, its stdout and stderr in files of its own; gcloud's exit status as its `sys.exit`."""
    out_path, err_path = os.path.join(folder, "out"), os.path.join(folder, "err")
    saved = os.dup(1), os.dup(2)
    sys.stdout.flush()
    sys.stderr.flush()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        code = 0
        try:
            cli.Execute(args)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException as error:  # a crash is a result too: 70, and its name
            print(f"crash: {error!r}", file=sys.stderr)
            code = 70
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    with open(out_path) as out, open(err_path) as err:
        return {"returncode": code, "stdout": out.read(), "stderr": err.read()}


def main() -> None:
    sdk, commands = sys.argv[1], json.load(sys.stdin)
    result = os.fdopen(os.dup(1), "w")  # the answer's stream, which no command writes to
    cli = _cli(sdk)
    done = []
    for args in commands:
        with tempfile.TemporaryDirectory() as folder:
            done.append(_run(cli, args, folder))
    json.dump(done, result)
    result.close()


if __name__ == "__main__":
    main()
