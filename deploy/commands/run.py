"""`dgemma run`: the image's entrypoint: weights, the engine per DGEMMA_ENGINE_MODE, the gateway."""

from __future__ import annotations

import argparse

NAME = "run"
HELP = "production start: weights (download or verify), the engine (DGEMMA_ENGINE_MODE), the gateway on $PORT"
REQUIRES: tuple[str, ...] = ()
SERVICE = True  # long-running: refusals are JSON log lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="gateway listen address (default: DGEMMA_HOST)")
    parser.add_argument("--port", type=int, help="gateway port (default: $PORT, DGEMMA_PORT or 8080)")


def run(args: argparse.Namespace) -> int:
    from app.core.config import load
    from app.core.observability import configure_logging
    from app.gateway.api_keys import KeyRing
    from app.gateway.settings import GatewaySettings
    from deploy.runtime.settings import SupervisorSettings
    from deploy.runtime.supervisor import Supervisor

    gateway = load(GatewaySettings, host=args.host, port=args.port)
    settings = load(SupervisorSettings)
    configure_logging(settings.log_level, settings.gcp_project)
    KeyRing.from_settings(gateway)  # no keys and no explicit opt-in: refuse before the engine loads
    return Supervisor(gateway, settings, weights=True).run()
