"""`dgemma keys add`: a new API key for a deployed service, as a new secret version."""

from __future__ import annotations

import argparse

from deploy.commands.deploy import add_common

NAME = "keys"
HELP = "add an API key to a deployed service's secret (printed once; the old keys stay valid)"
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")  # a checkout's command, like deploy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="generate a key and add it as the secret's latest version")
    add_common(add)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig
    from deploy.cloud.rollout import add_key
    from deploy.commands.deploy import config

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    key = add_key(cfg, Console(stderr=True, soft_wrap=True), f"{cfg.service}-api-keys")
    print(key)  # once, on stdout: pipe it where it goes
    return 0
