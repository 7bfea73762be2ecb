"""Where pages go: PagerDuty Events API v2, a Slack incoming webhook, a generic JSON webhook, the console.

A sink delivers a `Page` (a firing alert the policy chose to page or ticket, classified or not) and
resolves an `Alert`. Every delivery is keyed by `alert.key`: PagerDuty deduplicates on it (the
`dedup_key`), so a sender's redelivery never pages twice and the later, classified update of the same
alert lands on the same incident. Slack and the webhook do not deduplicate; the router's ledger does.

One module per sink (`pagerduty`, `slack`, `webhook`, `console`) over `config` (every sink's config,
secrets read from files or env vars), `delivery` (the shared client, retries, `SinkError`) and
`documents` (the texts and JSON documents the sinks share). Secrets (the PagerDuty routing key, the
Slack webhook URL, the webhook's token) are read once, by `build_sinks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from app.alerts.sinks.config import (
    PagerDutyConfig,
    SinkConfig,
    SinkConfigError,
    SlackConfig,
    WebhookConfig,
    http_url,
    parse_sink_configs,
    secret_of,
)
from app.alerts.sinks.console import ConsoleSink
from app.alerts.sinks.delivery import SharedClient, Sink, SinkError
from app.alerts.sinks.pagerduty import PagerDutySink
from app.alerts.sinks.slack import SlackSink
from app.alerts.sinks.webhook import WebhookSink

__all__ = ["Sink", "SinkConfig", "SinkConfigError", "SinkError", "build_sinks", "parse_sink_configs"]


def build_sinks(
    configs: Mapping[str, SinkConfig], *, client: httpx.AsyncClient | None = None
) -> dict[str, Sink]:
    """One sink per config, secrets read now. The HTTP sinks share `client` (its owner closes it), or
    one made here and closed with the last of them. Raises SinkConfigError (a ConfigError) naming the
    sink and the file."""
    makers = {name: _prepare(name, cfg) for name, cfg in configs.items()}  # every secret checked first
    shared = SharedClient(client)
    return {name: make(shared) for name, make in makers.items()}


def _prepare(name: str, cfg: SinkConfig) -> Callable[[SharedClient], Sink]:
    """Read and check the sink's secret now; the sink itself is made once every config passed."""
    if isinstance(cfg, PagerDutyConfig):
        key = secret_of(name, cfg, "routing_key")
        assert key is not None  # the config requires one
        return lambda shared: PagerDutySink(name, cfg, shared, key[0])
    if isinstance(cfg, SlackConfig):
        found = secret_of(name, cfg, "webhook_url")
        assert found is not None
        url, origin = found
        try:
            http_url(url)
        except ValueError:  # the message never quotes the URL: it is the secret
            raise SinkConfigError(
                f"sink {name!r} (slack): {origin} does not hold an absolute http(s) URL"
            ) from None
        return lambda shared: SlackSink(name, cfg, shared, url)
    if isinstance(cfg, WebhookConfig):
        token = secret_of(name, cfg, "token")
        return lambda shared: WebhookSink(name, cfg, shared, token[0] if token else None)
    return lambda _: ConsoleSink(name)
