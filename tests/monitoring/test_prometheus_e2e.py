"""The kit's monitoring end to end: a real Prometheus (devtools/harness/prometheus.py) scrapes `make dev`'s
gateway and router and evaluates the shipped rules; a decision-service outage pages through the real
Alertmanager into the router and out of its sink; and when the Watchdog stops reaching the router,
the dead-man's switch fires at a receiver that does not pass through the router.

Time runs 30 times faster than in production, the same for everything: the rules' `for` and
age thresholds (`fast_rules`: 5 min become 10 s; the expressions stay the shipped ones) and
Alertmanager's timings of docs/alert-routing.md (the Watchdog's minute becomes 2 s)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.alerts.main import create_router_app
from app.alerts.settings import AlertRouterSettings
from app.core.polling import wait_until
from app.gateway.main import create_app
from devtools.harness.alertmanager import alertmanager
from devtools.harness.alertmanager import ensure_installed as alertmanager_installed
from devtools.harness.local_stack import LocalStack
from devtools.harness.loopback import free_port
from devtools.harness.prometheus import (
    AGE_THRESHOLDS_S,
    RULES,
    Prometheus,
    Target,
    duration,
    fast_rules,
    prometheus,
    seconds,
)
from devtools.harness.prometheus import ensure_installed as prometheus_installed
from tests.helpers.alerts import Receiver, policy_toml, write_policy
from tests.helpers.gateway import NOUL, decision, gateway_settings, serving

# The outage runs its own gateway and router; the other two tests use `make dev`'s (marked `engine`).
pytestmark = pytest.mark.integration

SCALE = 1 / 30  # production's minutes as the test's seconds: 5 min -> 10 s, 1 min -> 2 s
TOKEN = "am-e2e-token"  # the sender's credential Alertmanager posts and Prometheus scrapes with
HOOK = "/v1/alerts/alertmanager"
BURN = "DgemmaDecisionErrorBudgetBurn"
SWITCH = "DgemmaAlertsHeartbeatMissing"
THRESHOLD_S = AGE_THRESHOLDS_S[SWITCH] * SCALE  # the newest heartbeat's age past which the switch fires


def shipped(alert: str) -> dict[str, Any]:
    """An alerting rule as monitoring/prometheus ships it."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r.get("alert") == alert]
    found: dict[str, Any] = rule
    return found


def scaled(minutes: float) -> str:
    return duration(minutes * 60 * SCALE)


def routing(router_url: str, direct_url: str, *, token: str | None, watchdog: bool = True) -> dict[str, Any]:
    """Alertmanager's routing as docs/alert-routing.md gives it, its durations scaled (unset ones
    at Alertmanager's defaults: group_wait 30 s, group_interval 5 min, repeat_interval 4 h): every
    alert to the router, the Watchdog to it every minute, the switch's own alert straight to
    `direct_url`. `watchdog=False`: the Watchdog's route broken (to a receiver with no integration)."""
    hook: dict[str, Any] = {"url": f"{router_url}{HOOK}", "send_resolved": True, "max_alerts": 0}
    if token is not None:
        hook["http_config"] = {"authorization": {"type": "Bearer", "credentials": token}}
    return {
        "route": {
            "receiver": "dgemma",
            "group_wait": scaled(0.5),
            "group_interval": scaled(5),
            "repeat_interval": scaled(240),
            "routes": [
                {
                    "matchers": ['alertname="Watchdog"'],
                    "receiver": "dgemma" if watchdog else "nowhere",
                    "group_wait": "0s",
                    "group_interval": scaled(1),
                    "repeat_interval": scaled(1),
                },
                {"matchers": [f'alertname="{SWITCH}"'], "receiver": "direct-pager", "group_wait": "0s"},
            ],
        },
        "receivers": [
            {"name": "dgemma", "webhook_configs": [hook]},
            {"name": "direct-pager", "webhook_configs": [{"url": direct_url, "send_resolved": True}]},
            {"name": "nowhere"},
        ],
    }


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    """Debian's Prometheus and Alertmanager (`make prometheus alertmanager` on a clean machine)."""
    try:
        prometheus_installed()
        alertmanager_installed()
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "dgemma.rules.yml"
    path.write_text(fast_rules(RULES.read_text(), SCALE))
    return path


def up(prom: Prometheus) -> dict[str, float]:
    return {r["metric"]["job"]: float(r["value"][1]) for r in prom.query("up")}


def documents(receiver: Receiver) -> list[dict[str, Any]]:
    """The JSON bodies the receiver was sent, in order."""
    return [json.loads(seen.body) for seen in receiver.server.requests]


@pytest.mark.engine
def test_prometheus_scrapes_the_dev_stack_and_evaluates_every_rule(
    stack: LocalStack, rules: Path, tmp_path: Path
) -> None:
    """Both of `make dev`'s processes are scraped as the rules expect them (jobs dgemma-gateway and
    dgemma-router), the SLO's recording rules compute from real decisions, and every rule evaluates
    without error against what the processes really export."""
    targets = [Target("dgemma-gateway", stack.url), Target("dgemma-router", stack.alerts_url)]
    with prometheus(tmp_path, targets, rule_files=[rules]) as prom:
        assert wait_until(lambda: up(prom) == {"dgemma-gateway": 1, "dgemma-router": 1}, 30), up(prom)

        def decided_and_recorded() -> float | None:
            # A decision between scrapes, until the rates over them give the p95 a value.
            done = httpx.post(
                f"{stack.url}/v1/systemone",
                json=decision(NOUL),
                headers={"authorization": "Bearer any"},
                timeout=60,
            )
            assert done.status_code == 200, done.text
            return prom.finite("dgemma:decision_latency_seconds:p95_5m")

        p95 = wait_until(decided_and_recorded, 120, interval_s=0.5)
        assert p95 is not None and p95 > 0
        slow = prom.finite("dgemma:decision_slow_ratio:rate5m")
        assert slow is not None and 0 <= slow <= 1
        assert wait_until(lambda: all(r["health"] != "unknown" for r in prom.rules()), 30)
        failing = [(r["name"], r["health"], r["lastError"]) for r in prom.rules() if r["health"] != "ok"]
        assert not failing, failing
        assert "Evaluating rule failed" not in prom.log(), prom.log()[-3000:]
        assert prom.alerts("Watchdog", "firing"), prom.alerts()  # the heartbeat fires from the start
        for target in prom.targets():
            assert (target["health"], target["lastError"]) == ("up", ""), target
        assert prom.value('count({job="dgemma-router", __name__=~"dgemma_alerts_.+"})')


@pytest.fixture
def pager() -> Iterator[Receiver]:
    """The router's sink: a webhook receiver on loopback."""
    with Receiver().served() as receiver:
        yield receiver


@pytest.fixture
def direct_pager() -> Iterator[Receiver]:
    """The receiver Alertmanager pages straight, around the router (the switch's alert)."""
    with Receiver().served() as receiver:
        yield receiver


def router_settings(root: Path, gateway_url: str, pager_url: str) -> AlertRouterSettings:
    """A router as deployed: every sender with a credential (so /metrics needs one too), asking
    `gateway_url`, paging every route through one webhook sink to `pager_url`."""
    policy = policy_toml(
        teams={"serving": "kit", "alerting": "kit"},
        routes={"kit": {"page": ["pager"]}, "oncall": {"page": ["pager"]}},
        questions={"page": "Wake someone now?", "team": "Which team owns it?", "severity": "How severe?"},
        sinks={"pager": {"type": "webhook", "url": pager_url}},
    )
    return AlertRouterSettings(
        alerts_policy_file=write_policy(root / "policy.toml", policy),
        alerts_gateway_url=gateway_url,
        alerts_gateway_api_key="any",
        alerts_alertmanager_token=TOKEN,
        alerts_grafana_token="grafana-unused",
        alerts_cloud_monitoring_token="cloud-monitoring-unused",
        log_level="WARNING",
    )


def test_a_decision_service_outage_pages_through_alertmanager_and_the_router(
    rules: Path, tmp_path: Path, pager: Receiver, direct_pager: Receiver
) -> None:
    """A gateway whose engine is gone answers 503; Prometheus sees its error budget burn and sends
    the alert to Alertmanager, which posts it (with the sender's token) to the router, which pages
    it out of its sink: unclassified, on the fallback route, since the service that would classify
    it is the one that is down."""
    engine_gone = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with ExitStack() as running:
        gateway = running.enter_context(serving(create_app(gateway_settings(engine_url=engine_gone))))
        router = running.enter_context(
            serving(create_router_app(router_settings(tmp_path, gateway, pager.url)))
        )
        am = running.enter_context(
            alertmanager(tmp_path / "alertmanager", settings=routing(router, direct_pager.url, token=TOKEN))
        )
        targets = [Target("dgemma-gateway", gateway), Target("dgemma-router", router, bearer=TOKEN)]
        prom = running.enter_context(
            prometheus(
                tmp_path / "prometheus",
                targets,
                rule_files=[rules],
                alertmanager_url=am.url,
                resend_delay_s=60 * SCALE,
            )
        )
        # The router's /metrics takes the sender's token: scraped with it, both are up.
        assert wait_until(lambda: up(prom) == {"dgemma-gateway": 1, "dgemma-router": 1}, 30), prom.targets()

        def burning() -> list[dict[str, Any]]:
            failed = httpx.post(
                f"{gateway}/v1/systemone",
                json=decision(NOUL),
                headers={"authorization": "Bearer any"},
                timeout=30,
            )
            assert failed.status_code == 503, failed.text
            return prom.alerts(BURN, "firing")

        assert wait_until(burning, 60, interval_s=0.2), prom.alerts()
        paged = wait_until(
            lambda: [d for d in documents(pager) if d["event"] == "trigger" and d["alert"]["title"] == BURN],
            60,
        )
        assert paged, (documents(pager), am.log()[-3000:])
    page = paged[0]
    assert page["alert"]["source"] == "alertmanager"
    assert page["alert"]["labels"] == {"alertname": BURN, **shipped(BURN)["labels"]}
    assert page["alert"]["summary"] == shipped(BURN)["annotations"]["summary"]
    assert page["page"]["action"] == "page" and page["page"]["route"] == "oncall", page["page"]
    assert page["page"]["classified"] is False and page["headline"].startswith("[unclassified]"), page


@pytest.mark.engine
def test_the_dead_mans_switch_fires_around_the_router_when_the_watchdog_stops(
    stack: LocalStack, rules: Path, tmp_path: Path, direct_pager: Receiver
) -> None:
    """The shipped Watchdog, routed as the docs say, reaches `make dev`'s router: its heartbeat
    advances in Prometheus and the switch stays quiet. Once Alertmanager's route to the router
    breaks, the heartbeat ages past the threshold while the router itself is up, and the switch
    fires at the direct pager, never through the router."""
    with ExitStack() as running:
        am = running.enter_context(
            alertmanager(
                tmp_path / "alertmanager", settings=routing(stack.alerts_url, direct_pager.url, token=None)
            )
        )
        prom = running.enter_context(
            prometheus(
                tmp_path / "prometheus",
                [Target("dgemma-router", stack.alerts_url)],
                rule_files=[rules],
                alertmanager_url=am.url,
                resend_delay_s=60 * SCALE,
            )
        )
        beats = 'dgemma_alerts_heartbeats_total{job="dgemma-router", source="alertmanager"}'
        first = wait_until(lambda: prom.value(beats), 30)
        assert first, prom.alerts()
        later: float = first + 2
        assert wait_until(lambda: (prom.value(beats) or 0) >= later, 30), (first, prom.value(beats))
        age = 'time() - max(dgemma_alerts_heartbeat_timestamp_seconds{job="dgemma-router"})'
        heartbeat_age = prom.value(age)
        assert heartbeat_age is not None and heartbeat_age < THRESHOLD_S, heartbeat_age
        # Fresh heartbeats: the switch is neither pending nor firing.
        assert wait_until(lambda: not prom.alerts(SWITCH), 30), prom.alerts(SWITCH)
        assert not direct_pager.server.requests

        am.reload(routing(stack.alerts_url, direct_pager.url, token=None, watchdog=False))
        # Silent for the threshold, then for the rule's `for`: the switch fires.
        silent_s = THRESHOLD_S + seconds(shipped(SWITCH)["for"]) * SCALE
        notified = wait_until(
            lambda: [d for d in documents(direct_pager) if d["status"] == "firing"], silent_s + 30
        )
        assert notified, (prom.alerts(), am.log()[-3000:])
        # The router is up and scraped: it is the route to it that broke, and the heartbeat says so.
        assert prom.value('up{job="dgemma-router"}') == 1
        heartbeat_age = prom.value(age)
        assert heartbeat_age is not None and heartbeat_age > THRESHOLD_S, heartbeat_age
        held = [a for a in am.alerts() if a["labels"]["alertname"] == SWITCH]
    [alert] = notified[0]["alerts"]
    assert alert["labels"] == {"alertname": SWITCH, **shipped(SWITCH)["labels"]}
    assert alert["annotations"] == shipped(SWITCH)["annotations"]
    assert [r["name"] for a in held for r in a["receivers"]] == ["direct-pager"], held
