"""`dgemma deploy`: one command from a checkout to a gated rollout on Cloud Run (see
deploy/cloud/rollout.py). The settings' flags come from deploy/cloud/variables.py (a setting not given
is what is deployed); every other default is `DeployConfig`'s, and a flag a command does not take
(destroy's, keys') leaves the field at it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

NAME = "deploy"
HELP = (
    "deploy to Cloud Run: Terraform, weights, Cloud Build, a candidate revision at 0 %, the load-test "
    "gate, then the traffic (exit 1 when the gate keeps the traffic where it was)"
)
# It runs the gate (Locust) and reads terraform/ and cloudbuild.yaml: a checkout's command, not the image's.
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")


def add_common(parser: argparse.ArgumentParser) -> None:
    from deploy.cloud.config import default

    parser.add_argument("--project", required=True, help="Google Cloud project id")
    parser.add_argument("--region", required=True, help="a Cloud Run region with L4 GPUs, e.g. europe-west4")
    parser.add_argument(
        "--service", default=default("service"), help="service name (also names its resources; %(default)s)"
    )
    parser.add_argument("--workdir", type=Path, help="where the generated Terraform root and reports go")
    parser.add_argument("--dry-run", action="store_true", help="print every command and file; run nothing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from deploy.cloud.config import default
    from deploy.cloud.variables import add_flags

    add_common(parser)
    parser.add_argument("--checkpoint", type=Path, help="local checkpoint, uploaded if it differs")
    parser.add_argument(
        "--base-image",
        metavar="IMAGE",
        help="the vLLM base, REPOSITORY:TAG or REPOSITORY@sha256:DIGEST (pin a digest in production); "
        "default: the Dockerfile's",
    )
    # The settings (deploy/cloud/variables.py): each not given is what is deployed.
    add_flags(parser)
    gate = parser.add_argument_group("gate")
    gate.add_argument(
        "--profile",
        default=default("profile"),
        help="load-test profile (loadtest/profiles.toml; %(default)s)",
    )
    gate.add_argument(
        "--target", action="append", dest="targets", metavar="NAME=VALUE", help="override a limit"
    )
    gate.add_argument("--latency-seconds", type=int)
    gate.add_argument("--throughput-seconds", type=int)
    gate.add_argument(
        "--warmup-seconds",
        type=float,
        default=default("warmup_seconds"),
        help="wait this long for a cold start (%(default)s)",
    )
    gate.add_argument(
        "--id-token", default=default("id_token"), choices=["off", "auto", "gcloud"], help="how to call it"
    )
    parser.add_argument("--allow-dirty", action="store_true", help="build from uncommitted changes")
    parser.add_argument(
        "--plan",
        action="store_true",
        help="show Terraform's plan of what the deploy would change (uploading, building and applying "
        "nothing), then exit",
    )


def config(args: argparse.Namespace) -> object:
    """The DeployConfig the flags ask for: each flag's value under its field's name (the flags' dests
    are the field names); a setting not given is left for the deploy to take from what is deployed
    (deploy/cloud/variables.py), a flag not taken by the command (destroy's, keys') at its default."""
    from dataclasses import fields

    from app.core.config import load
    from deploy.cloud.config import DeployConfig
    from deploy.cloud.variables import SETTINGS, given
    from deploy.runtime.settings import EngineSettings

    names = {f.name for f in fields(DeployConfig)}
    settings = {s.field for s in SETTINGS}
    plain: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in vars(args).items()
        if k in names and k not in settings and k not in ("given", "reset") and v is not None
    }
    values, named = given(args)
    return DeployConfig(
        **plain,
        **values,
        given=named,
        reset=tuple(getattr(args, "reset", None) or ()),
        engine=load(EngineSettings),
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig
    from deploy.cloud.rollout import deploy

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    return deploy(cfg, Console(soft_wrap=True))
