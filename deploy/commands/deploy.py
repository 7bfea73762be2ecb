"""`dgemma deploy`: one command from a checkout to a gated rollout on Cloud Run (see deploy/cloud.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "deploy"
HELP = (
    "deploy to Cloud Run: Terraform, weights, Cloud Build, a candidate revision at 0 %, the load-test "
    "gate, then the traffic (exit 1 when the gate keeps the traffic where it was)"
)
# It runs the gate (Locust) and reads terraform/ and cloudbuild.yaml: a checkout's command, not the image's.
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", required=True, help="Google Cloud project id")
    parser.add_argument("--region", required=True, help="a Cloud Run region with L4 GPUs, e.g. europe-west4")
    parser.add_argument("--service", default="dgemma", help="service name (also names its resources)")
    parser.add_argument("--workdir", type=Path, help="where the generated Terraform root and reports go")
    parser.add_argument("--dry-run", action="store_true", help="print every command and file; run nothing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from deploy.runtime.settings import WEIGHTS_MODES

    add_common(parser)
    weights = parser.add_argument_group("weights")
    weights.add_argument("--checkpoint", type=Path, help="local checkpoint, uploaded if it differs")
    weights.add_argument("--weights-prefix", default="dgemma-w4a16", help="its folder in the weights bucket")
    weights.add_argument(
        "--weights-mode",
        default="auto",
        choices=["auto", *WEIGHTS_MODES],
        help="how instances get the checkpoint; auto: the fastest start whose memory budget fits",
    )
    service = parser.add_argument_group("service")
    service.add_argument("--invoker", action="append", default=[], help="principal that may call it (repeat)")
    service.add_argument("--max-instances", type=int, default=1, help="at most this many L4s at once")
    service.add_argument("--l4-quota", type=int, default=3, help="the project's L4 quota in the region")
    service.add_argument("--cold-start-budget", type=int, default=900, help="seconds to ready (<= 1800)")
    service.add_argument(
        "--calibration",
        type=Path,
        help="a `dgemma calibrate` file for the gateway to serve by (README, Calibration)",
    )
    alerts = parser.add_argument_group("alert router")
    alerts.add_argument("--alerts-policy", type=Path, help="its routing policy (TOML); default: the image's")
    alerts.add_argument(
        "--alerts-sink",
        action="append",
        default=[],
        metavar="NAME",
        help="a sink secret, mounted at /secrets/sinks/NAME/value; its value added with gcloud (repeat)",
    )
    gate = parser.add_argument_group("gate")
    gate.add_argument("--profile", default="l4", help="load-test profile (loadtest/profiles.toml)")
    gate.add_argument("--target", action="append", default=[], metavar="NAME=VALUE", help="override a limit")
    gate.add_argument("--latency-seconds", type=int)
    gate.add_argument("--throughput-seconds", type=int)
    gate.add_argument("--warmup-seconds", type=float, default=900, help="wait this long for a cold start")
    gate.add_argument("--id-token", default="auto", choices=["off", "auto", "gcloud"], help="how to call it")
    parser.add_argument("--allow-dirty", action="store_true", help="build from uncommitted changes")


def config(args: argparse.Namespace) -> object:
    from app.core.config import load
    from deploy.cloud.rollout import DeployConfig
    from deploy.runtime.settings import EngineSettings

    return DeployConfig(
        project=args.project,
        region=args.region,
        service=args.service,
        workdir=args.workdir,
        dry_run=args.dry_run,
        checkpoint=getattr(args, "checkpoint", None),
        weights_prefix=getattr(args, "weights_prefix", "dgemma-w4a16"),
        weights_mode=getattr(args, "weights_mode", "auto"),
        invokers=tuple(getattr(args, "invoker", ())),
        max_instances=getattr(args, "max_instances", 1),
        l4_quota=getattr(args, "l4_quota", 3),
        cold_start_budget_s=getattr(args, "cold_start_budget", 900),
        profile=getattr(args, "profile", "l4"),
        targets=tuple(getattr(args, "target", ())),
        latency_seconds=getattr(args, "latency_seconds", None),
        throughput_seconds=getattr(args, "throughput_seconds", None),
        warmup_seconds=getattr(args, "warmup_seconds", 900),
        id_token=getattr(args, "id_token", "auto"),
        allow_dirty=getattr(args, "allow_dirty", False),
        alerts_policy=getattr(args, "alerts_policy", None),
        calibration=getattr(args, "calibration", None),
        alerts_sinks=tuple(getattr(args, "alerts_sink", ())),
        engine=load(EngineSettings),
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from deploy.cloud.rollout import DeployConfig, deploy

    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    return deploy(cfg, Console(soft_wrap=True))
