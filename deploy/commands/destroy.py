"""`dgemma destroy`: tear down what `dgemma deploy` made; the weights stay unless asked."""

from __future__ import annotations

import argparse

from deploy.commands.deploy import add_common

NAME = "destroy"
HELP = "tear down the service and its infrastructure (the weights bucket only with --delete-weights)"
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")  # a checkout's command, like deploy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--delete-weights", action="store_true", help="delete the checkpoint too")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig
    from deploy.cloud.rollout import destroy
    from deploy.commands.deploy import config

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    return destroy(cfg, Console(soft_wrap=True), delete_weights=args.delete_weights)
