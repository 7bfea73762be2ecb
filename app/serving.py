"""How a kit service runs (`dgemma serve`, `dgemma alerts serve`): JSON logs, its redacted settings
logged once, uvicorn draining in-flight requests after SIGTERM."""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import FastAPI

from app.config import KitSettings, redacted
from app.observability import configure_logging


def serve(
    build: Callable[[], FastAPI], settings: KitSettings, *, section: str, host: str, port: int, drain_s: int
) -> None:
    """Configure logging before `build` runs (so its start-up lines are JSON too), then serve."""
    import uvicorn

    configure_logging(settings.log_level, settings.gcp_project)
    logging.getLogger("app").info("configuration", extra={section: redacted(settings)})
    uvicorn.run(
        build(),
        host=host,
        port=port,
        log_config=None,  # uvicorn's loggers use the JSON handler configure_logging installed
        timeout_graceful_shutdown=drain_s,
    )
