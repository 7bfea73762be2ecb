"""The console sink: the local stack's default."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from app.alerts.records import Alert, Page
from app.alerts.sinks.documents import page_document, resolve_document

log = logging.getLogger("app.alerts.sinks")  # the package's name, not __name__: operators query it


class ConsoleSink:
    """One JSON line per delivery on stdout (`{"sink": NAME, ...page_document}`): the local stack's
    default, so a newcomer sees the page that would go out. Never fails."""

    kind = "console"

    def __init__(self, name: str) -> None:
        self.name = name

    def _print(self, document: dict[str, Any]) -> None:
        line = json.dumps({"sink": self.name, **document}, default=str, ensure_ascii=False)
        try:
            print(line, file=sys.stdout, flush=True)
        except (OSError, ValueError) as e:  # stdout closed or gone: the console is best effort
            log.warning("sink %s (console): cannot write to stdout (%s)", self.name, type(e).__name__)

    async def deliver(self, page: Page) -> None:
        self._print(page_document(page))

    async def resolve(self, alert: Alert) -> None:
        self._print(resolve_document(alert))

    async def aclose(self) -> None:
        pass
