"""The Slack incoming-webhook sink."""

from __future__ import annotations

from typing import Any

from app.alerts.records import Alert, Page
from app.alerts.sinks.config import SlackConfig
from app.alerts.sinks.delivery import HttpSink, SharedClient
from app.alerts.sinks.documents import _links, _markers, answer_text


def _slack_escape(text: str) -> str:
    # Slack's three control characters; everything else is literal text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_SLACK_ICON = {
    "critical": ":rotating_light:",
    "error": ":red_circle:",
    "warning": ":warning:",
    "info": ":information_source:",
}


class SlackSink(HttpSink):
    """A Slack incoming webhook: one `{"text": ...}` message (mrkdwn) per delivery, one per
    resolution. Slack answers 200 `ok`."""

    kind = "slack"

    def __init__(self, name: str, config: SlackConfig, shared: SharedClient, webhook_url: str) -> None:
        super().__init__(name, config, shared)
        self._webhook_url = webhook_url

    @staticmethod
    def message(page: Page) -> dict[str, Any]:
        alert = page.alert
        icon = _SLACK_ICON[page.severity] if page.action == "page" else ":ticket:"
        markers = _markers(page)
        title = f"*{_slack_escape(alert.title)}*"
        lines = [f"{icon} {_slack_escape(markers) + ' ' if markers else ''}{title}"]
        if alert.summary and alert.summary != alert.title:
            lines.append(_slack_escape(alert.summary))
        lines.append(f"{page.action} · route `{_slack_escape(page.route)}` · severity {page.severity}")
        if page.reason:
            lines.append(f"_{_slack_escape(page.reason)}_")
        if page.answers:
            lines.append(_slack_escape(" · ".join(answer_text(k, v) for k, v in page.answers.items())))
        links = [f"<{link['href']}|{_slack_escape(link['text'])}>" for link in _links(alert)]
        if links:
            lines.append(" · ".join(links))
        return {"text": "\n".join(lines)}

    @staticmethod
    def resolution(alert: Alert) -> dict[str, Any]:
        text = f":white_check_mark: [resolved] *{_slack_escape(alert.title)}*"
        if alert.summary and alert.summary != alert.title:
            text += f": {_slack_escape(alert.summary)}"
        return {"text": text}

    async def deliver(self, page: Page) -> None:
        await self._post(self._webhook_url, self.message(page))

    async def resolve(self, alert: Alert) -> None:
        await self._post(self._webhook_url, self.resolution(alert))
