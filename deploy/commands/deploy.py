"""`dgemma deploy`: one command from a checkout to a gated rollout on Cloud Run (see
deploy/cloud/rollout.py). Every default is `DeployConfig`'s: the flags read theirs from it, and a
flag a command does not take (destroy's, keys') leaves the field at it."""

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
    from deploy.runtime.settings import WEIGHTS_MODES

    add_common(parser)
    weights = parser.add_argument_group("weights")
    weights.add_argument("--checkpoint", type=Path, help="local checkpoint, uploaded if it differs")
    weights.add_argument(
        "--weights-prefix",
        default=default("weights_prefix"),
        help="its folder in the weights bucket (%(default)s)",
    )
    weights.add_argument(
        "--weights-mode",
        default=default("weights_mode"),
        choices=["auto", *WEIGHTS_MODES],
        help="how instances get the checkpoint; auto: the fastest start whose memory budget fits",
    )
    # Repeated flags collect into a list; `config` makes it the field's tuple (none given: its default).
    service = parser.add_argument_group("service")
    service.add_argument(
        "--invoker",
        action="append",
        dest="invokers",
        metavar="PRINCIPAL",
        help="principal that may call it (repeat)",
    )
    service.add_argument(
        "--max-instances", type=int, default=default("max_instances"), help="at most this many L4s at once"
    )
    service.add_argument(
        "--l4-quota", type=int, default=default("l4_quota"), help="the project's L4 quota in the region"
    )
    service.add_argument(
        "--cold-start-budget",
        type=int,
        dest="cold_start_budget_s",
        default=default("cold_start_budget_s"),
        metavar="SECONDS",
        help="seconds to ready (<= 1800; %(default)s)",
    )
    service.add_argument(
        "--calibration",
        type=Path,
        help="a `dgemma calibrate` file for the gateway to serve by (README, Calibration)",
    )
    service.add_argument(
        "--label", action="append", dest="labels", metavar="KEY=VALUE", help="on every resource (repeat)"
    )
    service.add_argument(
        "--cpu", default=default("cpu"), help="vCPUs of a GPU instance: 4, 6 or 8 (%(default)s)"
    )
    service.add_argument(
        "--memory", default=default("memory"), help="memory of a GPU instance: 16Gi to 32Gi (%(default)s)"
    )
    service.add_argument(
        "--zonal-redundancy",
        action="store_true",
        help="GPU failover across zones: a higher price and its own L4 quota (--l4-quota states that one)",
    )
    service.add_argument("--log-level", default=default("log_level"), help="both services' (%(default)s)")
    service.add_argument(
        "--billing-account",
        metavar="ID",
        help="with --budget: a monthly budget alert on the project (needs a billing role on the account)",
    )
    service.add_argument(
        "--budget", type=int, metavar="AMOUNT", help="a month's budget, in the billing account's currency"
    )
    service.add_argument(
        "--base-image",
        metavar="IMAGE",
        help="the vLLM base, REPOSITORY:TAG or REPOSITORY@sha256:DIGEST (pin a digest in production); "
        "default: the Dockerfile's",
    )
    alerts = parser.add_argument_group("alert router")
    alerts.add_argument("--alerts-policy", type=Path, help="its routing policy (TOML); default: the image's")
    alerts.add_argument(
        "--alerts-mode",
        choices=["act", "shadow"],
        help="act on the policy's decisions, or shadow them (page as sent, record what it would do); "
        "default: shadow for a new router (a trial before it pages people by its decisions), the "
        "running router's mode otherwise",
    )
    alerts.add_argument(
        "--alerts-sink",
        action="append",
        dest="alerts_sinks",
        metavar="NAME",
        help="a sink secret, mounted at /secrets/sinks/NAME/value; its value added with gcloud (repeat)",
    )
    alerts.add_argument(
        "--router-min-instances",
        type=int,
        default=default("router_min_instances"),
        metavar="N",
        help="router instances kept up: 1 answers at once (~$100 a month with its metrics collector), "
        "0 costs nothing idle (%(default)s)",
    )
    monitoring = parser.add_argument_group("monitoring (Cloud Monitoring: terraform/README.md, Monitoring)")
    monitoring.add_argument(
        "--notify",
        action="append",
        dest="notification_channels",
        metavar="CHANNEL",
        help="a notification channel of the kit's alert policies, projects/P/notificationChannels/ID "
        "(repeat; none: incidents in the console only)",
    )
    monitoring.add_argument(
        "--deadman-notify",
        action="append",
        dest="deadman_channels",
        metavar="CHANNEL",
        help="a channel of the router's dead-man's switch and uptime alerts: one that does not pass "
        "through the router (repeat)",
    )
    monitoring.add_argument(
        "--gpu-uptime-check",
        action="store_true",
        help="an uptime check of the GPU service every 15 min: it keeps an L4 up around the clock "
        "(about $1,022 a month)",
    )
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
    are the field names); a flag not given, or not taken by the command, leaves the field's default."""
    from dataclasses import fields

    from app.core.config import load
    from deploy.cloud.config import DeployConfig
    from deploy.runtime.settings import EngineSettings

    names = {f.name for f in fields(DeployConfig)}
    given: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in vars(args).items() if k in names
    }
    return DeployConfig(**{k: v for k, v in given.items() if v is not None}, engine=load(EngineSettings))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.config import DeployConfig
    from deploy.cloud.rollout import deploy

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    return deploy(cfg, Console(soft_wrap=True))
