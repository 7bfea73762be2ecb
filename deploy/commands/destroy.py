"""`dgemma destroy`: tear down what `dgemma deploy` made; the weights stay unless asked."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from deploy.commands.deploy import add_common

if TYPE_CHECKING:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig

NAME = "destroy"
HELP = "tear down the service and its infrastructure (the weights bucket only with --delete-weights)"
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")  # a checkout's command, like deploy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--delete-weights", action="store_true", help="delete the checkpoint too")
    parser.add_argument(
        "--yes", action="store_true", help="do not ask (without it, the service's name must be typed)"
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig
    from deploy.cloud.rollout import destroy
    from deploy.commands.deploy import config

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    console = Console(soft_wrap=True)
    if not (cfg.dry_run or args.yes):
        confirm(cfg, console, args.delete_weights)
    return destroy(cfg, console, delete_weights=args.delete_weights)


def confirm(cfg: DeployConfig, console: Console, delete_weights: bool) -> None:
    """What goes, and the service's name typed back; refused without a terminal (use --yes)."""
    import sys

    from app.core.config import ConfigError

    if not sys.stdin.isatty():
        raise ConfigError("dgemma destroy deletes the services and their data: confirm with --yes")
    kept = "" if delete_weights else f" (kept: the weights in gs://{cfg.weights_bucket})"
    console.print(
        f"This deletes {cfg.service} and {cfg.router} in {cfg.project}/{cfg.region}, their images, the "
        f"API-key and sender secrets and the alert ledger{kept}; the Terraform state bucket "
        f"gs://{cfg.state_bucket} stays.",
        markup=False,
    )
    if input(f"type {cfg.service} to go on: ").strip() != cfg.service:
        raise ConfigError("not confirmed: nothing was deleted")
