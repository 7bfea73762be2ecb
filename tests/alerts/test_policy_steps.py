"""`Policy.decide` as steps: each step alone on a verdict (a table), and the whole against the
function it replaced (the oracle below, kept verbatim) on many generated answers, alerts and
policies: the same pages, reasons and audit records."""

from __future__ import annotations

import dataclasses
import math
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
from app.alerts.records import Action, Alert, Page
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


# -- the whole, against the function it replaced ------------------------------------------------

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


def _old_audit(page: Page, would: Page | None, label: str) -> dict[str, Any]:
    """The audit record as it was read from the answers' JSON (the oracle's side)."""
    answers = (would or page).answers
    team = str(answers["team"]["choice"]) if answers else None
    record = AuditRecord.of(page, event="decision", mode="shadow" if would else "act", would=would,
                            source_label=label)  # fmt: skip
    return record.model_dump(exclude={"at"}) | {
        "p_page": float(answers["page"]["noul"]) if answers else None,
        "team": team,
        "p_team": float(answers["team"]["probabilities"][team]) if answers and team else None,
    }


def _audit(page: Page, would: Page | None, label: str) -> dict[str, Any]:
    record = AuditRecord.of(page, event="decision", mode="shadow" if would else "act", would=would,
                            source_label=label)  # fmt: skip
    return record.model_dump(exclude={"at"})


@pytest.mark.parametrize("variant", ["default", "ruled", "other"])
def test_the_steps_decide_as_the_function_they_replaced(policies: dict[str, Policy], variant: str) -> None:
    policy, rng = policies[variant], random.Random(f"issue-35-{variant}")
    label = policy.spec.floor.label
    for n in range(800):
        alert, response = _random_alert(rng), _response(rng, policy)
        # What the old client gave the old decide: the answers dumped back to JSON, and the names calibrated.
        answers = response.model_dump(mode="json")["answers"]
        calibrated = frozenset(name for name, d in response.diagnostics.items() if d.calibrated)
        old = old_decide(policy, alert, answers, calibrated=calibrated)
        new = policy.decide(alert, RouterAnswers.of(response))
        where = f"case {n}: {alert.title} {alert.labels} {answers}"
        assert new == old, where  # every field but the reading of the answers, the reason included
        assert new.router_answers is not None and new.router_answers.wire == answers, where
        assert _audit(new, None, label) == _old_audit(old, None, label), where
        sent = policy.as_sent(alert)
        assert _audit(sent, new, label) == _old_audit(sent, old, label), where
        # Unasked: a rule that never classifies decides alone, or both refuse.
        try:
            alone = old_decide(policy, alert, None)
        except ValueError as e:
            with pytest.raises(ValueError, match=str(e)):
                policy.decide(alert, None)
        else:
            assert policy.decide(alert, None) == alone, where


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


# -- the oracle: `Policy.decide` as it was before issue 35, item 5 ------------------------------
# Verbatim from `git show d96c98d:app/alerts/policy.py` (lines 211-303), dedented into a function of
# the policy. Do not edit: it is what the steps are checked against.


def old_decide(
    self: Policy,
    alert: Alert,
    answers: dict[str, Any] | None,
    *,
    calibrated: frozenset[str] = frozenset(),
) -> Page:
    """The action, route and severity for an alert: the model's answers through the thresholds
    and the uncertain band, then the alert's rule (its action and team replace the model's), the
    severity floor (unless the rule set the action) and the routes' drop switch. `answers` None:
    a rule that never classifies decides alone. `calibrated`: the questions whose probabilities
    the gateway scaled by its calibration file; the reason says which thresholds met them."""
    rule = self.rule_for(alert)
    if answers is None:
        if rule is None or rule.classify or rule.action is None:
            raise ValueError(f"{alert.key}: no answers, and no rule decides without the model")
        route = self.spec.teams[rule.team].route if rule.team else self.fallback_route
        return Page(
            alert=alert,
            action=rule.action,
            route=route,
            severity=self.source_level(alert) or ("error" if rule.action == "page" else "warning"),
            classified=False,
            reason=f"rule {rule.name}: {rule.action}, not classified",
            rules=(rule.name,),
        )
    t = self.spec.thresholds
    levels = self.spec.severity.levels
    p_page = float(answers["page"]["noul"])
    team = str(answers["team"]["choice"])
    p_team = float(answers["team"]["probabilities"][team])
    # Half up (round() would take 2.5 to 2): the expected level, nearest first.
    nearest = math.floor(float(answers["severity"]["score"]) + 0.5)
    level = levels[min(len(levels) - 1, max(0, nearest))]
    severe = levels.index(level) >= levels.index(t.page_severity)
    action: Action
    low_confidence = False
    if p_page >= t.page or severe:
        action, reason = (
            "page",
            f"p(page) {p_page:.2f} >= {t.page}" if p_page >= t.page else f"severity {level}",
        )
    elif p_page >= t.uncertain:
        action, low_confidence = "page", True
        reason = f"p(page) {p_page:.2f} in the uncertain band [{t.uncertain}, {t.page})"
    elif p_page >= t.ticket:
        action, reason = "ticket", f"p(page) {p_page:.2f} in [{t.ticket}, {t.uncertain})"
    else:
        action, reason = "drop", f"p(page) {p_page:.2f} < {t.ticket}"
    if "page" in calibrated:
        reason += " (calibrated)"
    acted: list[str] = []
    route = self.spec.teams[team].route
    if rule is not None and rule.team is not None:
        route = self.spec.teams[rule.team].route
        reason += f"; rule {rule.name}: team {rule.team}"
    if rule is not None and rule.action is not None:
        if rule.action != action:
            reason += f"; rule {rule.name}: {rule.action}"
            low_confidence = False
        action = rule.action
    else:
        floor = self.spec.floor.of(alert)
        if floor is not None and at_least(action, floor[0]) != action:
            action, low_confidence = floor[0], False
            reason += f"; the sender's {self.spec.floor.label} {floor[1]}: at least {floor[0]}"
            acted.append("floor")
            source = self.source_level(alert)  # the page says what its sender said, at least
            if source is not None and levels.index(source) > levels.index(level):
                level = source
        if action == "drop" and not self.spec.routes[route].drop:  # the owner's route decides
            action = "ticket"
            reason += f"; route {route} does not drop: a ticket"
    unsure_team = rule is None or rule.team is None
    if unsure_team and p_team < t.team_confidence and action != "drop":
        route, low_confidence = self.fallback_route, True
        reason += f"; team {team} only {p_team:.2f} < {t.team_confidence}: the fallback route"
        if "team" in calibrated:
            reason += " (calibrated)"
    if rule is not None:
        acted.insert(0, rule.name)
    return Page(
        alert=alert,
        action=action,
        route=route,
        severity=level,
        classified=True,
        low_confidence=low_confidence,
        answers=answers,
        reason=reason,
        calibrated="page" in calibrated,
        rules=tuple(acted),
    )
