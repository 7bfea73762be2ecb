"""`dgemma rollback`: the GPU service's traffic and the alert router back to before the last deploy."""

from __future__ import annotations

import argparse

from deploy.commands.deploy import add_common

NAME = "rollback"
HELP = (
    "move the GPU service's traffic back to the revision that served before (or --to one) and the "
    "alert router back to its settings before, through Terraform, so the next run keeps it"
)
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")  # a checkout's command, like deploy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from deploy.cloud.rollback import PARTS

    add_common(parser)
    parser.add_argument("--to", default="", metavar="REVISION", help="the GPU revision to serve")
    parser.add_argument(
        "--only", choices=PARTS, help="roll back the GPU service or the alert router alone (default: both)"
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig
    from deploy.cloud.rollback import PARTS, rollback
    from deploy.commands.deploy import config

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    parts = (args.only,) if args.only else PARTS
    return rollback(cfg, Console(soft_wrap=True), to=args.to, parts=parts)
