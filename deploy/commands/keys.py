"""`dgemma keys add|list|rotate|revoke`: a deployed service's API keys, the latest version of its secret."""

from __future__ import annotations

import argparse

from deploy.commands.deploy import add_common

NAME = "keys"
HELP = "add, list, rotate or revoke a deployed service's API keys (a key is printed once, by add)"
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")  # a checkout's command, like deploy
# What running instances take to see a change: the gateway's DGEMMA_API_KEYS_RELOAD_S default.
TAKES = "running instances take the change within a minute (DGEMMA_API_KEYS_RELOAD_S)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="generate a key and add it to the secret's keys (printed once)")
    add_common(add)
    listed = actions.add_parser("list", help="each accepted key's ID and first 4 characters, never the key")
    add_common(listed)
    rotate = actions.add_parser(
        "rotate",
        help="a new key for the alert router (first in the secret's keys), the old one kept until revoked",
    )
    add_common(rotate)
    revoke = actions.add_parser("revoke", help="remove a key (by its ID) and disable the older versions")
    revoke.add_argument("id", help="the key's ID, as `dgemma keys list` shows it")
    add_common(revoke)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig
    from deploy.cloud.keys import SETTLE_S, add_key, list_keys, revoke_key, rotate_key
    from deploy.commands.deploy import config

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    console = Console(stderr=True, soft_wrap=True)
    if args.action == "list":
        for line in list_keys(cfg, console):
            print(line)
        return 0
    if args.action == "revoke":
        done = f"revoked {revoke_key(cfg, console, args.id)}"
    elif args.action == "rotate":
        new, old = rotate_key(cfg, console)
        done = (
            f"the alert router's new key is {new} (never shown: only the router sends it); once both have "
            f"read it, in about {SETTLE_S} s: `dgemma keys revoke {old or 'OLD_ID'}`"
        )
    else:
        print(add_key(cfg, console))  # once, on stdout: pipe it where it goes
        done = "added"
    if not cfg.dry_run:
        console.print(f"{done}; {TAKES}", markup=False)
    return 0
