"""The PagerDuty Events API v2 sink."""

from __future__ import annotations

from typing import Any

from app.alerts.records import Alert, Page, Severity
from app.alerts.sinks.config import PagerDutyConfig
from app.alerts.sinks.delivery import HttpSink, SharedClient
from app.alerts.sinks.documents import _clip, _links, _page_fields, dedup_key, headline

_SUMMARY_MAX = 1024  # PagerDuty's limit on payload.summary


def _first_label(alert: Alert, *names: str) -> str | None:
    return next((alert.labels[n] for n in names if alert.labels.get(n)), None)


class PagerDutySink(HttpSink):
    """PagerDuty Events API v2. `dedup_key` is always the alert's key: a redelivery updates the same
    alert instead of paging twice, the classified update of an unclassified page lands on its
    incident, and `resolve` closes it. A `ticket` (any action but `page`) goes out with severity
    `info`, whatever the page's severity, so it does not wake anyone under PagerDuty's usual
    urgency rules; which routes send tickets here is the policy's choice."""

    kind = "pagerduty"

    def __init__(self, name: str, config: PagerDutyConfig, shared: SharedClient, routing_key: str) -> None:
        super().__init__(name, config, shared)
        self.url = config.url
        self.client_name = config.client_name
        self._routing_key = routing_key

    def event(self, page: Page) -> dict[str, Any]:
        """The trigger event for `page`."""
        alert = page.alert
        severity: Severity = page.severity if page.action == "page" else "info"
        payload: dict[str, Any] = {
            "summary": _clip(headline(page), _SUMMARY_MAX),
            "source": _first_label(alert, "instance", "host", "pod", "service", "job") or alert.source,
            "severity": severity,
            "class": alert.title,
            "custom_details": {
                **_page_fields(page),
                "summary": alert.summary,
                "alert_source": alert.source,
                "alert_key": alert.key,
                "labels": alert.labels,
                "annotations": alert.annotations,
            },
        }
        if alert.started_at is not None:
            payload["timestamp"] = alert.started_at.isoformat()
        component = _first_label(alert, "service", "job", "container")
        if component:
            payload["component"] = component
        group = _first_label(alert, "namespace", "cluster")
        if group:
            payload["group"] = group
        body: dict[str, Any] = {
            "routing_key": self._routing_key,
            "event_action": "trigger",
            "dedup_key": dedup_key(alert),
            "payload": payload,
            "client": self.client_name,
        }
        if alert.url:
            body["client_url"] = alert.url
        links = _links(alert)
        if links:
            body["links"] = links
        return body

    async def deliver(self, page: Page) -> None:
        await self._post(self.url, self.event(page))

    async def resolve(self, alert: Alert) -> None:
        body = {"routing_key": self._routing_key, "event_action": "resolve", "dedup_key": dedup_key(alert)}
        await self._post(self.url, body)
