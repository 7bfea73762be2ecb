"""The routing policy file: what it asks, how answers become an action, and the errors a mistake in
it gets (file and line, or the field)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.alerts.answers import RouterAnswers
from app.alerts.policy import Policy, PolicyError
from app.alerts.records import Alert
from app.alerts.settings import DEFAULT_POLICY
from app.alerts.sinks.config import PagerDutyConfig
from tests.helpers.alerts import RULES

pytestmark = pytest.mark.unit

ALERT = Alert(source="alertmanager", key="alertmanager:f1", status="firing", title="DiskFull", summary="97%")


def answers(p_page: float, team: str = "database", p_team: float = 0.9, score: float = 1.0) -> RouterAnswers:
    return RouterAnswers(p_page=p_page, team=team, p_team=p_team, severity_score=score)


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy.load(DEFAULT_POLICY)


def test_the_default_policy_loads_and_asks_three_questions(policy: Policy) -> None:
    # What the router sends: the gateway's own request model, as JSON.
    request = policy.request(ALERT).model_dump(mode="json", exclude_none=True)
    assert request["state"] == {"alert": "DiskFull", "summary": "97%", "source": "alertmanager"}
    assert {name: q["type"] for name, q in request["questions"].items()} == {
        "page": "noul",
        "team": "choice",
        "severity": "score",
    }
    assert set(request["questions"]["team"]["criteria"]) == {"database", "network", "application"}
    assert request["questions"]["severity"]["criteria"] == ["info", "warning", "error", "critical"]
    assert policy.fallback_route == "oncall"
    assert policy.sinks_of("database", "page") == ["console"]
    assert policy.sinks_of("database", "drop") == []


@pytest.mark.parametrize(
    ("p_page", "score", "action", "low_confidence"),
    [
        (0.7, 0.0, "page", False),
        (0.6999, 0.0, "page", True),
        (0.4, 0.0, "page", True),
        (0.3999, 0.0, "ticket", False),
        (0.15, 0.0, "ticket", False),
        (0.1499, 0.0, "ticket", False),  # a drop, but the default routes do not drop
        (0.0, 2.49, "ticket", False),  # rounds to "error": below page_severity
        (0.0, 2.5, "page", False),  # rounds to "critical"
        (0.0, 9.0, "page", False),  # out of range: clamped to the top level
    ],
)
def test_thresholds_and_severity(
    policy: Policy, p_page: float, score: float, action: str, low_confidence: bool
) -> None:
    page = policy.decide(ALERT, answers(p_page, score=score))
    assert (page.action, page.low_confidence, page.classified) == (action, low_confidence, True)
    assert page.route == "database"


def test_an_unsure_team_goes_to_the_fallback_route(policy: Policy) -> None:
    page = policy.decide(ALERT, answers(0.9, team="network", p_team=0.49))
    assert (page.route, page.low_confidence) == ("oncall", True)
    assert "team network only 0.49 < 0.5" in page.reason
    assert policy.decide(ALERT, answers(0.9, team="network", p_team=0.5)).route == "network"
    unsure_ticket = policy.decide(ALERT, answers(0.01, p_team=0.2))
    assert (unsure_ticket.action, unsure_ticket.route) == ("ticket", "oncall")


def test_the_default_policy_never_drops_and_a_source_critical_alert_pages(policy: Policy) -> None:
    low = policy.decide(ALERT, answers(0.01))
    assert (low.action, low.rules) == ("ticket", ())
    assert "route database does not drop: a ticket" in low.reason
    critical = replace(ALERT, labels={"severity": "CRITICAL"})
    page = policy.decide(critical, answers(0.01, score=0.0))
    assert (page.action, page.rules, page.severity, page.low_confidence) == (
        "page",
        ("floor",),
        "critical",
        False,
    )
    assert "the sender's severity CRITICAL: at least page" in page.reason
    warning = policy.decide(replace(ALERT, labels={"severity": "warning"}), answers(0.01))
    assert warning.action == "ticket" and warning.rules == ()
    # The fallback and shadow pages carry the sender's severity when it is one of the levels.
    assert policy.fallback(critical, "down").severity == "critical"
    assert policy.as_sent(critical).severity == "critical" and policy.as_sent(ALERT).severity == "error"


@pytest.fixture(scope="module")
def ruled(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    path = tmp_path_factory.mktemp("rules") / "policy.toml"
    path.write_text(DEFAULT_POLICY.read_text() + RULES)
    return Policy.load(path)


def _alert(title: str, **labels: str) -> Alert:
    return Alert(source="alertmanager", key=f"alertmanager:{title}", status="firing", title=title,
                 summary="", labels=labels)  # fmt: skip


def test_rules_act_before_and_after_the_model_and_are_named(ruled: Policy) -> None:
    pay = _alert("Latency", service="payments", env="prod")
    assert (
        ruled.rule_for(pay) is not None
        and ruled.rule_for(_alert("Latency", service="payments", env="staging")) is None
    )
    page = ruled.decide(pay, answers(0.01))
    assert (page.action, page.rules) == ("page", ("payments-always-page",))
    assert "rule payments-always-page: page" in page.reason
    # Never classify: decided without answers, dropped (a rule may drop), unclassified.
    watchdog = ruled.decide(_alert("Watchdog"), None)
    assert (watchdog.action, watchdog.classified, watchdog.rules) == ("drop", False, ("watchdog",))
    # A rule's action wins over the severity floor; the floor would have paged it.
    noisy = ruled.decide(_alert("FlappyCritical", severity="critical"), answers(0.99))
    assert (noisy.action, noisy.rules) == ("ticket", ("noisy-critical",))
    # A team rule routes, whatever the model's team and its confidence; the floor still applies.
    pg = ruled.decide(
        _alert("ConnectionsHigh", job="pgbouncer", severity="critical"),
        answers(0.1, team="network", p_team=0.3),
    )
    assert (pg.action, pg.route, pg.rules) == ("page", "database", ("pg-is-database", "floor"))
    assert "rule pg-is-database: team database" in pg.reason
    # Matching is on whole values, as Alertmanager's regex matchers are.
    assert ruled.rule_for(_alert("ConnectionsHigh", job="postgres-exporter")) is None
    # The fallback page still goes to a rule's team.
    assert ruled.fallback(_alert("X", job="postgres"), "down").route == "database"
    with pytest.raises(ValueError, match="no rule decides without the model"):
        ruled.decide(pay, None)


def test_a_route_may_allow_drops(tmp_path: Path) -> None:
    route = '[routes.database]\npage = ["console"]\nticket = ["console"]'
    text = DEFAULT_POLICY.read_text().replace(route, route + "\ndrop = true")
    assert "drop = true" in text
    policy = Policy.load(_write(tmp_path, text))
    assert policy.decide(ALERT, answers(0.01)).action == "drop"
    assert policy.decide(ALERT, answers(0.01, team="network")).action == "ticket"


def test_the_fallback_page(policy: Policy) -> None:
    page = policy.fallback(ALERT, "budget missed")
    assert (page.action, page.route, page.classified, page.reason) == (
        "page",
        "oncall",
        False,
        "budget missed",
    )
    assert page.answers == {}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def _default(**replace: str) -> str:
    text = DEFAULT_POLICY.read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fallback_route = \n", "line 1"),
        (
            _default(**{'fallback_route = "oncall"': 'fallback_route = "nobody"'}),
            "fallback_route 'nobody' is not one of",
        ),
        (_default(**{'route = "network"': 'route = "netw"'}), "teams.network.route: unknown route 'netw'"),
        (_default(**{"uncertain = 0.4 ": "uncertain = 0.8 "}), "expected ticket <= uncertain <= page"),
        (
            _default(**{"page = 0.7 ": "page = 1.7 "}),
            "thresholds.page: Input should be less than or equal to 1",
        ),
        (_default(**{'page_severity = "critical"': 'page_severity = "fatal"'}), "thresholds.page_severity"),
        (
            _default(**{'[routes.oncall]\npage = ["console"]': '[routes.oncall]\npage = ["pager"]'}),
            "routes.oncall.page[0]: unknown sink 'pager'",
        ),
        (
            _default(**{"[thresholds]": "[thresholds]\npaeg = 0.5"}),
            "thresholds.paeg: Extra inputs are not permitted",
        ),
        (
            _default(**{'levels = ["info", "warning", "error", "critical"]': 'levels = ["error", "info"]'}),
            "least severe first",
        ),
        (_default(**{'type = "console"': 'type = "pagerduty"'}), "routing_key"),
        (
            DEFAULT_POLICY.read_text() + '[[rules]]\nname = "r"\nmatchers = ["severity"]\naction = "page"\n',
            "rules.0: 'severity' is not a matcher",
        ),
        (
            DEFAULT_POLICY.read_text() + '[[rules]]\nname = "r"\nmatchers = [\'a=~"(\']\naction = "page"\n',
            "the regex does not compile",
        ),
        (
            DEFAULT_POLICY.read_text() + '[[rules]]\nname = "r"\nmatchers = [\'a="b"\']\nteam = "dba"\n',
            "rules[0] (r): unknown team 'dba'",
        ),
        (
            DEFAULT_POLICY.read_text()
            + '[[rules]]\nname = "r"\nmatchers = [\'a="b"\']\nclassify = false\nteam = "database"\n',
            "classify = false needs an action",
        ),
        (
            DEFAULT_POLICY.read_text() + '[[rules]]\nname = "r"\nmatchers = [\'a="b"\']\n',
            "sets neither action nor team",
        ),
        (
            _default(**{'actions = { critical = "page" }': 'actions = { critical = "wake" }'}),
            "floor.actions.critical",
        ),
    ],
)
def test_a_policy_mistake_names_the_file_and_where(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PolicyError) as caught:
        Policy.load(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_missing_policy_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="No such file"):
        Policy.load(tmp_path / "absent.toml")


def test_secret_files_are_found_beside_the_policy(tmp_path: Path) -> None:
    (tmp_path / "pd.key").write_text("R0UTINGKEY0123456789012345678901\n")
    pagerduty = '[sinks.console]\ntype = "pagerduty"\nrouting_key_file = "pd.key"'
    text = _default(**{'[sinks.console]\ntype = "console"': pagerduty})
    policy = Policy.load(_write(tmp_path, text))
    config = policy.sink_configs["console"]
    assert isinstance(config, PagerDutyConfig)
    assert Path(str(config.routing_key_file)) == tmp_path / "pd.key"


def test_questions_the_gateway_would_refuse_are_a_policy_error(tmp_path: Path) -> None:
    teams = "".join(f'\n[teams.t{i}]\ndescription = "team {i}"\nroute = "oncall"\n' for i in range(256))
    text = _default().split("[teams.database]")[0] + teams + "\n[routes" + _default().split("[routes", 1)[1]
    path = _write(tmp_path, text)
    with pytest.raises(PolicyError, match="the gateway would refuse these questions: Too many choices"):
        Policy.load(path)
