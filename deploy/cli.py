"""`dgemma`: the kit's command line. Subcommands live in `deploy/commands/` (one module each); this
module builds the parser from them, dispatches, and reports the kit's typed errors
(`app.core.errors.KitError`: each carries its exit code and label).

Exit codes: 0 done; 1 the command ran and the answer is no (a gate target missed, a checkpoint that
does not verify or fit, a child process died), or its output's reader went away (`| head`); 2
refused before doing the work (an invalid setting or flag, unusable weights, a profile that cannot
fit the GPU, an unknown load-test profile); 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from rich.console import Console

from app.core.errors import KitError
from deploy.commands import NAMES, all_commands, missing

log = logging.getLogger("deploy")


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """Every command's summary; the arguments of `selected` only, when named (all for `--help`), so
    that a command's start loads no other command's room (`dgemma alerts serve` in the router image)."""
    parser = argparse.ArgumentParser(prog="dgemma", description="The DiffusionGemma decision kit.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    absent = []
    for command in all_commands():
        lacking = missing(command)
        if lacking:  # offer only what this installation can run (the image's lock has no Locust)
            absent.append(f"{command.NAME} (needs {', '.join(lacking)})")
            continue
        # argparse %-formats help strings (`%(default)s`), not descriptions: a literal `%` in the
        # summary is doubled in the first only.
        summary = command.HELP.replace("%", "%%")
        cmd = sub.add_parser(command.NAME, help=summary, description=command.HELP)
        if selected in (None, command.NAME):
            command.add_arguments(cmd)
        cmd.set_defaults(run=command.run, logs_json=getattr(command, "SERVICE", False))
    if absent:
        parser.epilog = "Not installed here: " + "; ".join(absent) + "."
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    named = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(named if named in NAMES else None).parse_args(argv)
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # here, so that a reader gone away shows now and not at exit
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader stopped reading (`dgemma keys list | head -1`): nothing more to say. Python's
        # own recipe: stdout onto /dev/null so that its flush at exit raises nothing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KitError as error:  # every room's typed failure carries its exit code and label
        report(f"{error.label}: {error}", as_log=args.logs_json)
        return error.exit_code
    return code


def report(message: str, *, as_log: bool) -> None:
    """A refusal: a JSON log line from a service (Cloud Logging reads it), a red line otherwise."""
    if as_log:
        if not log.handlers:  # refused before the command configured logging (its settings were bad)
            from app.core.observability import configure_logging

            configure_logging("INFO")
        log.error(message)
    else:
        Console(stderr=True, soft_wrap=True).print(message, style="red", markup=False, highlight=False)


if __name__ == "__main__":
    sys.exit(main())
