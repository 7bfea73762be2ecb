"""`Policy.decide` as steps: each step alone on a verdict (a table), and the whole on many generated
answers, alerts and policies: every page keeps what each step promises, in its fields, its reason
and its audit record."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import replace
from typing import Any

import pytest

from app.alerts.answers import RouterAnswers
from app.alerts.audit import AuditRecord
from app.alerts.ledger import CHOSEN, Ledger
from app.alerts.policy import (
    STEPS,
    Case,
    Policy,
    Step,
    Verdict,
    model_verdict,
    route_drop,
    rule_action,
    rule_team,
    severity_floor,
    unsure_team,
)
from app.alerts.records import Alert, Page
from app.alerts.rules import at_least
from app.alerts.settings import DEFAULT_POLICY
from app.alerts.store import MemoryStore
from app.jev.wire import SystemOneResponse
from tests.helpers.alerts import RULES as BASE_RULES

pytestmark = pytest.mark.unit

RULES = (
    BASE_RULES
    + """
[[rules]]
name = "edge-is-network-and-pages"
matchers = ['job="edge"']
team = "network"
action = "page"
"""
)
DATABASE_ROUTE = '[routes.database]\npage = ["console"]\nticket = ["console"]'


def _variant(name: str) -> str:
    """The policies the steps are checked on: the default; with rules, and a route that drops; with
    rules and other thresholds, three levels, a floor of three actions, every route dropping."""
    text = DEFAULT_POLICY.read_text()
    if name == "default":
        return text
    if name == "ruled":
        return text.replace(DATABASE_ROUTE, DATABASE_ROUTE + "\ndrop = true") + RULES
    for old, new in {
        "page = 0.7 ": "page = 0.9 ",
        "uncertain = 0.4 ": "uncertain = 0.5 ",
        "ticket = 0.15 ": "ticket = 0.3 ",
        'page_severity = "critical"': 'page_severity = "error"',
        "team_confidence = 0.5 ": "team_confidence = 0.7 ",
        'levels = ["info", "warning", "error", "critical"]': 'levels = ["warning", "error", "critical"]',
        'actions = { critical = "page" }': 'actions = { critical = "page", error = "ticket", info = "drop" }',
        'ticket = ["console"]\n': 'ticket = ["console"]\ndrop = true\n',
    }.items():
        assert old in text, old
        text = text.replace(old, new)
    return text + RULES


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Policy]:
    out = {}
    for name in ("default", "ruled", "other"):
        path = tmp_path_factory.mktemp(name) / "policy.toml"
        path.write_text(_variant(name))
        out[name] = Policy.load(path)
    return out


def _alert(title: str = "DiskFull", **labels: str) -> Alert:
    return Alert(source="alertmanager", key=f"alertmanager:{title}", status="firing", title=title,
                 summary="", labels={"alertname": title, **labels})  # fmt: skip


def _answers(
    p_page: float = 0.5, team: str = "network", p_team: float = 0.9, score: float = 1.0, *calibrated: str
) -> RouterAnswers:
    return RouterAnswers(p_page, team, p_team, score, frozenset(calibrated))


# -- each step alone ----------------------------------------------------------------------------

TICKET = Verdict("ticket", "network", "warning", reasons=("p(page) 0.20 in [0.15, 0.4)",))
UNSURE = Verdict("page", "network", "warning", low_confidence=True, reasons=("band",))
DROP = Verdict("drop", "network", "info", reasons=("p(page) 0.01 < 0.15",))


@pytest.mark.parametrize(
    ("step", "alert", "answers", "before", "after"),
    [
        pytest.param(rule_team, _alert(), _answers(), TICKET, TICKET, id="team: no rule"),
        pytest.param(rule_team, _alert(job="pgbouncer"), _answers(), TICKET,
                     replace(TICKET, route="database", rules=("pg-is-database",),
                             reasons=(*TICKET.reasons, "rule pg-is-database: team database")),
                     id="team: the rule's team routes"),
        pytest.param(rule_team, _alert(service="payments"), _answers(), TICKET, TICKET,
                     id="team: a rule without a team"),
        pytest.param(rule_action, _alert(), _answers(), TICKET, TICKET, id="action: no rule"),
        pytest.param(rule_action, _alert(service="payments"), _answers(), TICKET,
                     replace(TICKET, action="page", rules=("payments-always-page",),
                             reasons=(*TICKET.reasons, "rule payments-always-page: page")),
                     id="action: the rule's action replaces the model's"),
        pytest.param(rule_action, _alert(service="payments"), _answers(), UNSURE,
                     replace(UNSURE, rules=("payments-always-page",)),
                     id="action: the same action, still unsure, the rule named"),
        pytest.param(rule_action, _alert("FlappyCritical"), _answers(), UNSURE,
                     replace(UNSURE, action="ticket", low_confidence=False, rules=("noisy-critical",),
                             reasons=(*UNSURE.reasons, "rule noisy-critical: ticket")),
                     id="action: a rule's action is sure"),
        pytest.param(severity_floor, _alert(), _answers(), TICKET, TICKET, id="floor: no label"),
        pytest.param(severity_floor, _alert(severity="Critical"), _answers(), TICKET,
                     replace(TICKET, action="page", level="critical", rules=("floor",),
                             reasons=(*TICKET.reasons, "the sender's severity Critical: at least page")),
                     id="floor: a critical alert pages, at the sender's level"),
        pytest.param(severity_floor, _alert(severity="critical"), _answers(), UNSURE, UNSURE,
                     id="floor: already a page"),
        pytest.param(severity_floor, _alert("FlappyCritical", severity="critical"), _answers(), TICKET,
                     TICKET, id="floor: a rule set the action"),
        pytest.param(route_drop, _alert(), _answers(), DROP,
                     replace(DROP, action="ticket",
                             reasons=(*DROP.reasons, "route network does not drop: a ticket")),
                     id="drop: a route that does not drop tickets"),
        pytest.param(route_drop, _alert(), _answers(), replace(DROP, route="database"),
                     replace(DROP, route="database"), id="drop: a route that drops"),
        pytest.param(route_drop, _alert("Watchdog"), _answers(), DROP, DROP, id="drop: a rule set it"),
        pytest.param(route_drop, _alert(), _answers(), TICKET, TICKET, id="drop: not a drop"),
        pytest.param(unsure_team, _alert(), _answers(p_team=0.5), TICKET, TICKET, id="unsure: sure enough"),
        pytest.param(unsure_team, _alert(), _answers(p_team=0.49), TICKET,
                     replace(TICKET, route="oncall", low_confidence=True,
                             reasons=(*TICKET.reasons, "team network only 0.49 < 0.5: the fallback route")),
                     id="unsure: the fallback route"),
        pytest.param(unsure_team, _alert(), _answers(0.5, "network", 0.2, 1.0, "team"), TICKET,
                     replace(TICKET, route="oncall", low_confidence=True, reasons=(
                         *TICKET.reasons, "team network only 0.20 < 0.5: the fallback route (calibrated)")),
                     id="unsure: calibrated"),
        pytest.param(unsure_team, _alert(), _answers(p_team=0.2), DROP, DROP, id="unsure: a drop stays"),
        pytest.param(unsure_team, _alert(job="postgres"), _answers(p_team=0.2), TICKET, TICKET,
                     id="unsure: a rule's team"),
    ],
)  # fmt: skip
def test_each_step_alone(
    policies: dict[str, Policy], step: Step, alert: Alert, answers: RouterAnswers, before: Verdict,
    after: Verdict,
) -> None:  # fmt: skip
    policy = policies["ruled"]
    assert step(Case(policy, alert, policy.rule_for(alert), answers), before) == after


@pytest.mark.parametrize(
    ("answers", "after"),
    [
        (_answers(0.7, "database", 0.9, 0.0),
         Verdict("page", "database", "info", False, ("p(page) 0.70 >= 0.7",))),
        (_answers(0.7, "database", 0.9, 0.0, "page"),
         Verdict("page", "database", "info", False, ("p(page) 0.70 >= 0.7 (calibrated)",))),
        (_answers(0.1, "network", 0.9, 2.5),  # half up: critical, which pages
         Verdict("page", "network", "critical", False, ("severity critical",))),
        (_answers(0.5, "network", 0.9, 2.49),
         Verdict("page", "network", "error", True, ("p(page) 0.50 in the uncertain band [0.4, 0.7)",))),
        (_answers(0.15, "database", 0.9, -3.0),  # clamped to the lowest level
         Verdict("ticket", "database", "info", False, ("p(page) 0.15 in [0.15, 0.4)",))),
        (_answers(0.1499, "database", 0.9, 9.0),  # clamped to the highest
         Verdict("page", "database", "critical", False, ("severity critical",))),
        (_answers(0.1499, "database", 0.9, 1.0),  # the drop switch is a step of its own
         Verdict("drop", "database", "warning", False, ("p(page) 0.15 < 0.15",))),
    ],
)  # fmt: skip
def test_the_models_verdict(policies: dict[str, Policy], answers: RouterAnswers, after: Verdict) -> None:
    policy = policies["default"]
    assert model_verdict(Case(policy, _alert(), None, answers)) == after


def test_the_steps_run_in_this_order() -> None:
    assert (rule_team, rule_action, severity_floor, route_drop, unsure_team) == STEPS


# -- the whole, on generated cases -------------------------------------------------------------

TITLES = ["DiskFull", "Watchdog", "FlappyCritical", "ConnectionsHigh", "Latency"]
LABELS: dict[str, list[str | None]] = {
    "severity": [None, "critical", "CRITICAL", " error ", "warning", "info", "fatal", ""],
    "service": [None, "payments"],
    "env": [None, "prod", "staging"],
    "job": [None, "postgres", "pgbouncer", "postgres-exporter", "edge"],
}


def _random_alert(rng: random.Random) -> Alert:
    labels = {name: v for name, values in LABELS.items() if (v := rng.choice(values)) is not None}
    return _alert(rng.choice(TITLES), **labels)


def _probability(rng: random.Random, edges: list[float]) -> float:
    """Half of them on a threshold, or just below or above one; the rest anywhere."""
    if rng.random() < 0.5:
        return min(1.0, max(0.0, rng.choice(edges) + rng.choice([-1e-9, 0.0, 1e-9, -0.005, 0.005])))
    return rng.random()


def _response(rng: random.Random, policy: Policy) -> SystemOneResponse:
    """What the gateway answers the policy's request, the calibrated questions included."""
    t, teams, levels = policy.spec.thresholds, list(policy.spec.teams), policy.spec.severity.levels
    p_page = _probability(rng, [0.0, t.ticket, t.uncertain, t.page, 1.0])
    team, p_team = rng.choice(teams), _probability(rng, [0.0, t.team_confidence, 1.0])
    others = [name for name in teams if name != team]
    half = rng.choice([-0.5, 0.5, 0.49999, -0.50001])  # where the expected level rounds
    score = rng.choice([rng.uniform(-1.0, len(levels) + 1.0), rng.randrange(len(levels)) + half])
    calibrated = {name for name in ("page", "team", "severity") if rng.random() < 0.3}
    return SystemOneResponse.model_validate({
        "object": "structured_decision", "model": "toy",
        "answers": {
            "page": {"type": "noul", "noul": p_page},
            "team": {"type": "choice", "choice": team, "confidence": p_team,
                     "probabilities": {team: p_team, **dict.fromkeys(others, (1 - p_team) / len(others))}},
            "severity": {"type": "score", "score": score, "confidence": 0.8,
                         "legend": {str(i): level for i, level in enumerate(levels)},
                         "probabilities": {str(i): 1 / len(levels) for i in range(len(levels))}},
        },
        "usage": {"input_tokens": 10, "output_tokens": 3},
        "diagnostics": {name: {"reads": 1, "engine_reads": 1, "confidence": 0.8,
                               "calibrated": name in calibrated} for name in ("page", "team", "severity")},
        "read_policy": {},
    })  # fmt: skip


def _read(answers: dict[str, Any]) -> tuple[float, str, float]:
    """p(page), the team and its probability, read from the answers' JSON as a sink shows them."""
    team = str(answers["team"]["choice"])
    return float(answers["page"]["noul"]), team, float(answers["team"]["probabilities"][team])


@pytest.mark.parametrize("variant", ["default", "ruled", "other"])
def test_the_whole_keeps_what_each_step_promises(policies: dict[str, Policy], variant: str) -> None:
    """On many generated alerts, answers and policies (half of them on a threshold's edge): the model's
    verdict (tested alone above) goes through the rule's team and action, the sender's floor, the
    route's drop switch and the team's confidence, each as its own test says, and the page, its
    reason and its audit record say so."""
    policy, rng = policies[variant], random.Random(f"issue-35-{variant}")
    spec, label = policy.spec, policy.spec.floor.label
    for n in range(800):
        alert, response = _random_alert(rng), _response(rng, policy)
        answers = RouterAnswers.of(response)
        rule = policy.rule_for(alert)
        model = model_verdict(Case(policy, alert, rule, answers))
        page = policy.decide(alert, answers)
        where = f"case {n}: {alert.title} {alert.labels} {answers}"
        assert page.classified and page.router_answers == answers, where
        assert page.reason.startswith(model.reasons[0]), where  # the model's verdict first, then the steps
        # The team: the rule's, else the model's; the fallback route when the model is unsure and the
        # alert is not dropped.
        team_route = spec.teams[rule.team].route if rule and rule.team else model.route
        unsure = (rule is None or rule.team is None) and answers.p_team < spec.thresholds.team_confidence
        if rule and rule.team:
            assert f"rule {rule.name}: team {rule.team}" in page.reason, where
        # The action: the rule's, else the model's raised to the sender's floor, a drop a ticket where
        # the route keeps everything.
        floor = spec.floor.of(alert)
        if rule and rule.action:
            assert page.action == rule.action and page.rules[0] == rule.name, where
            assert "floor" not in page.rules, where
        else:
            raised = model.action if floor is None else at_least(model.action, floor[0])
            kept = raised == "drop" and not spec.routes[team_route].drop
            assert page.action == ("ticket" if kept else raised), where
            assert ("floor" in page.rules) == (raised != model.action), where
            assert (f"route {team_route} does not drop: a ticket" in page.reason) == kept, where
        expected_route = spec.fallback_route if unsure and page.action != "drop" else team_route
        assert page.route == expected_route, where
        assert ("the fallback route" in page.reason) == (page.route != team_route), where
        # Low confidence: the uncertain band, unless a rule or the floor changed the action; or the team.
        band = model.low_confidence and page.action == model.action and "floor" not in page.rules
        overruled = rule is not None and rule.action is not None and rule.action != model.action
        assert page.low_confidence == ((band and not overruled) or page.route != team_route), where
        # The level: the model's, raised to the sender's where the floor acted.
        source = policy.source_level(alert)
        levels = spec.severity.levels
        if "floor" in page.rules and source is not None and levels.index(source) > levels.index(model.level):
            assert page.severity == source, where
        else:
            assert page.severity == model.level, where
        assert page.calibrated == ("page" in answers.calibrated), where
        # The audit record reads the same figures a sink shows from the answers' JSON.
        wire = response.model_dump(mode="json")["answers"]
        assert answers.wire == wire, where
        record = AuditRecord.of(page, event="decision", mode="act", would=None, source_label=label)
        assert (record.p_page, record.team, record.p_team) == _read(wire), where
        sent = policy.as_sent(alert)
        shadow = AuditRecord.of(sent, event="decision", mode="shadow", would=page, source_label=label)
        assert (shadow.p_page, shadow.team, shadow.p_team) == _read(wire), where
        # Unasked: only a rule that never classifies decides, alone and as it says.
        if rule is None or rule.classify or rule.action is None:
            with pytest.raises(ValueError, match="no rule decides without the model"):
                policy.decide(alert, None)
        else:
            alone = policy.decide(alert, None)
            assert (alone.action, alone.classified, alone.rules) == (rule.action, False, (rule.name,)), where


async def test_the_ledger_keeps_a_page_as_it_did(policies: dict[str, Policy]) -> None:
    """The router's reading of the answers is this process's: the ledger keeps the page's own fields."""
    policy = policies["ruled"]
    page = policy.decide(_alert(severity="critical"), _answers(0.9, "database", 0.8, 2.0, "page"))
    assert page.router_answers is not None
    store = MemoryStore()
    episode = await Ledger(store).episode(page.alert)
    assert (await episode.choose(page)) == (page, True)
    found = await store.read(episode.prefix + CHOSEN)
    assert found is not None
    fields = {f.name for f in dataclasses.fields(Page)} - {"router_answers"}
    assert set(found.body["page"]) == fields
    again = await Ledger(store).episode(page.alert)
    await again.load()
    assert await again.page() == page  # equal: the reading is not compared
