"""`dgemma serve`: the gateway alone; the engine URL comes from its settings."""

from __future__ import annotations

import argparse

NAME = "serve"
HELP = "run the gateway only (the supervisor starts it this way); the engine URL comes from settings"
REQUIRES: tuple[str, ...] = ()
SERVICE = True  # long-running: refusals are JSON log lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="listen address (default: DGEMMA_HOST)")
    parser.add_argument("--port", type=int, help="port (default: $PORT, DGEMMA_PORT or 8080)")
    parser.add_argument(
        "--drain-seconds", type=int, default=8, help="after SIGTERM, finish in-flight requests for this long"
    )


def run(args: argparse.Namespace) -> int:
    from app.core.config import load
    from app.core.serving import serve
    from app.gateway.main import create_app
    from app.gateway.settings import GatewaySettings

    settings = load(GatewaySettings, host=args.host, port=args.port)
    serve(
        lambda: create_app(settings), settings, section="gateway", host=settings.host, port=settings.port,
        drain_s=args.drain_seconds,
    )  # fmt: skip
    return 0
