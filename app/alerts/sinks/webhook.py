"""The generic JSON webhook sink."""

from __future__ import annotations

from app.alerts.records import Alert, Page
from app.alerts.sinks.config import WebhookConfig
from app.alerts.sinks.delivery import HttpSink, SharedClient
from app.alerts.sinks.documents import page_document, resolve_document


class WebhookSink(HttpSink):
    """A generic JSON webhook: `page_document(page)` per delivery, `resolve_document(alert)` per
    resolution, with `Authorization: Bearer TOKEN` when a token file is configured. Any 2xx is done."""

    kind = "webhook"

    def __init__(self, name: str, config: WebhookConfig, shared: SharedClient, token: str | None) -> None:
        super().__init__(name, config, shared)
        self.url = config.url
        self._headers = {"authorization": f"Bearer {token}"} if token else {}

    async def deliver(self, page: Page) -> None:
        await self._post(self.url, page_document(page), self._headers)

    async def resolve(self, alert: Alert) -> None:
        await self._post(self.url, resolve_document(alert), self._headers)
