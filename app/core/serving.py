"""How a kit service runs (`dgemma serve`, `dgemma alerts serve`): JSON logs, its redacted settings
logged once, uvicorn draining in-flight requests after SIGTERM."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import FrameType
from typing import Protocol

import uvicorn
from fastapi import FastAPI

from app.core.config import KitSettings, redacted
from app.core.observability import configure_logging

log = logging.getLogger("app")
# How long an idle connection stays open: longer than the proxy in front keeps one (Google's front
# ends, 600 s), so the server never closes a connection just as the proxy reuses it, which the
# proxy would answer with a 502. uvicorn's 5 s made paced clients meet closed connections
# (found by the overload run of `make reliability`). Shutdown still closes idle connections at once.
KEEP_ALIVE_S = 620


class Drain(Protocol):
    """What an app may put on `app.state.drain` (the gateway: its admission)."""

    draining: bool

    def drain(self) -> None: ...

    @property
    def idle(self) -> bool: ...


class _Server(uvicorn.Server):
    """uvicorn, draining first: on SIGTERM (or Ctrl+C) the app's `Drain` turns new work away with
    a 503 and Retry-After while what it started finishes, for up to `drain_s`; then uvicorn stops
    as it always does (listener closed, connections finished). Without the drain, new requests
    would meet a closed port; a 503 tells a client or balancer to retry elsewhere. A second signal
    stops at once."""

    def __init__(self, config: uvicorn.Config, drain: Drain | None, drain_s: float) -> None:
        super().__init__(config)
        self._drain = drain
        self._drain_s = drain_s
        self._drain_until: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drain is None or self._drain_until is not None:
            super().handle_exit(sig, frame)
        else:
            self._drain_until = time.monotonic() + self._drain_s  # the loop's next tick starts it

    async def on_tick(self, counter: int) -> bool:
        if self._drain is not None and self._drain_until is not None and not self.should_exit:
            if not self._drain.draining:
                self._drain.drain()
                log.info(
                    "draining: new requests get 503 for up to %.0f s while started ones finish", self._drain_s
                )
            left = self._drain_until - time.monotonic()
            if self._drain.idle or left <= 0:
                # uvicorn's own wait for connections gets what is left of the budget (at least 1 s).
                self.config.timeout_graceful_shutdown = max(1, round(left))
                self.should_exit = True
        return await super().on_tick(counter)


def serve(
    build: Callable[[], FastAPI], settings: KitSettings, *, section: str, host: str, port: int, drain_s: int
) -> None:
    """Configure logging before `build` runs (so its start-up lines are JSON too), then serve."""
    configure_logging(settings.log_level, settings.gcp_project)
    log.info("configuration", extra={section: redacted(settings)})
    app = build()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,  # uvicorn's loggers use the JSON handler configure_logging installed
        timeout_graceful_shutdown=drain_s,
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    drain: Drain | None = getattr(app.state, "drain", None)
    _Server(config, drain, drain_s).run()
