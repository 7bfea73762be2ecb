"""`dgemma serve`: the gateway alone; the engine URL comes from its settings."""

from __future__ import annotations

import argparse
import logging

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
    import uvicorn

    from app.config import load, redacted
    from app.main import create_app
    from app.observability import configure_logging
    from app.settings import GatewaySettings

    settings = load(GatewaySettings, host=args.host, port=args.port)
    configure_logging(settings.log_level, settings.gcp_project)
    logging.getLogger("app").info("configuration", extra={"gateway": redacted(settings)})
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,  # uvicorn's loggers use the JSON handler configure_logging installed
        timeout_graceful_shutdown=args.drain_seconds,
    )
    return 0
