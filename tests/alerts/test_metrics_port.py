"""The router's metrics-only listener (DGEMMA_ALERTS_METRICS_PORT): what a collector in the same
Cloud Run instance scrapes, since it cannot send a sender's token. It serves the same registry as
the authenticated /metrics, on loopback only, for as long as the router runs."""

from __future__ import annotations

import socket

import httpx
import pytest

from app.alerts.main import create_router_app, metrics_listener
from app.alerts.metrics import RouterMetrics
from app.alerts.settings import AlertRouterSettings
from app.core.config import ConfigError
from app.core.net import free_port
from tests.helpers.gateway import serving

pytestmark = pytest.mark.integration

WATCHDOG = {
    "version": "4",
    "status": "firing",
    "receiver": "dgemma",
    "groupKey": '{}:{alertname="Watchdog"}',
    "alerts": [{
        "status": "firing", "labels": {"alertname": "Watchdog"}, "annotations": {},
        "startsAt": "2026-12-04T09:00:00Z", "fingerprint": "fedcba9876543210",
    }],
}  # fmt: skip


def settings(metrics_port: int) -> AlertRouterSettings:
    return AlertRouterSettings(
        alerts_gateway_url="http://127.0.0.1:9", alerts_alertmanager_token="am", alerts_grafana_token="gr",
        alerts_cloud_monitoring_token="cm", log_level="WARNING",
        alerts_metrics_port=metrics_port,
    )  # fmt: skip


def test_the_metrics_port_serves_the_routers_metrics_without_credentials() -> None:
    port = free_port()
    with serving(create_router_app(settings(port))) as url:
        assert httpx.get(f"{url}/metrics").status_code == 401, "the public port still asks a sender's token"
        hook = httpx.post(
            f"{url}/v1/alerts/alertmanager", json=WATCHDOG, headers={"authorization": "Bearer am"}
        )
        assert hook.status_code == 200, hook.text
        # As Cloud Run's collector addresses it (0.0.0.0:PORT reaches the loopback listener).
        for host in ("127.0.0.1", "0.0.0.0"):
            scraped = httpx.get(f"http://{host}:{port}/metrics")
            assert scraped.status_code == 200
            assert 'dgemma_alerts_heartbeats_total{source="alertmanager"} 1.0' in scraped.text
        authed = httpx.get(f"{url}/metrics", headers={"authorization": "Bearer am"}).text
        assert "dgemma_alerts_heartbeat_timestamp_seconds" in authed, "one registry behind both"
    with pytest.raises(httpx.ConnectError):  # closed with the router
        httpx.get(f"http://127.0.0.1:{port}/metrics")


def _outward_address() -> str | None:
    """This machine's address on its default route (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def test_the_metrics_port_listens_on_loopback_only() -> None:
    port = free_port()
    with serving(create_router_app(settings(port))):
        outward = _outward_address()
        if outward is None:
            pytest.skip("this machine has no address but loopback")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://{outward}:{port}/metrics")


def test_a_taken_metrics_port_is_a_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"DGEMMA_ALERTS_METRICS_PORT {port}"):
            metrics_listener(port, RouterMetrics().registry)
