"""`dgemma dev`: the local stack (what `make dev` runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "dev"
HELP = "run the local stack: vLLM (CPU) on the toy model, the gateway and the alert router"
REQUIRES: tuple[str, ...] = ()
SERVICE = True  # long-running: refusals are JSON log lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="gateway port (default: $PORT or 8080)")
    parser.add_argument("--engine-port", type=int, help="internal vLLM port (default 8100)")
    parser.add_argument("--engine-log", type=Path, default=Path(".cache/engine.log"))
    parser.add_argument(
        "--alerts-port", type=int, help="alert router port (default: DGEMMA_ALERTS_PORT or 8090)"
    )
    parser.add_argument("--no-alerts", action="store_true", help="do not start the alert router")


def run(args: argparse.Namespace) -> int:
    from app.alerts.settings import AlertRouterSettings
    from app.core.config import load
    from app.core.observability import configure_logging
    from app.gateway.settings import GatewaySettings
    from deploy.devstack.stack import (
        DEV_MODELS,
        DEV_ROUTER_DEFAULTS,
        console,
        dev_gateway_defaults,
        ensure_engine_env,
        ensure_tiny_model,
        verify_toy_model,
    )
    from deploy.runtime.settings import SupervisorSettings
    from deploy.runtime.supervisor import Supervisor

    settings = load(SupervisorSettings, engine_port=args.engine_port)
    gateway = load(GatewaySettings, dev_gateway_defaults(DEV_MODELS[settings.dev_model]), port=args.port)
    # Not the gateway's PORT: the router reads its own port from DGEMMA_ALERTS_PORT here.
    router = (
        None
        if args.no_alerts
        else load(AlertRouterSettings, DEV_ROUTER_DEFAULTS, alerts_port=args.alerts_port or _alerts_port())
    )
    configure_logging(settings.log_level, settings.gcp_project)
    ensure_engine_env(settings.engine_python)
    if settings.dev_model == "toy":
        settings = settings.model_copy(update={"model_dir": verify_toy_model()})
    else:
        ensure_tiny_model(settings.model_dir, settings.engine_python)
    console.print(
        f"Starting vLLM (CPU, Triton interpreter) on {settings.model_dir}; log: {args.engine_log} "
        "(about 30-60 s)"
    )
    supervisor = Supervisor(gateway, settings, weights=False, engine_log_path=args.engine_log, router=router)
    return supervisor.run()


def _alerts_port() -> int:
    import os

    from app.alerts.settings import AlertRouterSettings

    default = AlertRouterSettings.model_fields["alerts_port"].default
    return int(os.environ.get("DGEMMA_ALERTS_PORT", default))
