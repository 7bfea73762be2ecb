"""The realistic alerts the toy trains on (deploy/models/scripts/alert_corpus/): each sender's
payload goes through the router's own parser and request to exactly the state text the generator
trains on, the training questions are the default policy's, values or states decide severity, and
the splits are deterministic and held out."""

from __future__ import annotations

import importlib
import itertools
import json
import re
import tomllib
from collections import Counter
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.alerts.formats import parse_body
from app.alerts.policy import Policy
from app.alerts.records import SOURCES, Alert, labels_fingerprint
from app.alerts.settings import DEFAULT_POLICY
from app.gateway.decisions.orders import option_order
from app.gateway.decisions.plan import Spec, render
from app.jev.wire import ChoiceQuestion, NoulQuestion, ScoreQuestion
from deploy.devstack.stack import script_module
from deploy.models import SCRIPTS
from evals.alerts.gofmt import go_labels, go_value
from evals.alerts.labelled import without_severity

pytestmark = pytest.mark.unit


def _load() -> ModuleType:
    """The generator as the engine's python runs it: by path, standard library only."""
    return script_module("alert_corpus")


corpus = _load()
POLICY = Policy.load(DEFAULT_POLICY)


def _text(state: Any) -> str:
    return json.dumps(state, ensure_ascii=False)


@pytest.mark.parametrize("source", SOURCES)
def test_each_payload_is_read_as_the_state_the_generator_trains_on(source: str) -> None:
    items = corpus.examples("test", 300, source)
    for item in items:
        raw = json.dumps(item["payload"]).encode()  # the sender's bytes
        (alert,) = parse_body(source, raw).alerts  # type: ignore[arg-type]
        assert alert.status == "firing"
        request = POLICY.request(alert)
        # The gateway's text of the state is what vLLM reads (key order included).
        assert render(request.state) == _text(item["state"]), item["alert"]["kind"]
    # Broad, not a few templates: every team and level, most kinds, many names in one split.
    assert {i["team"] for i in items} == set(corpus.TEAMS)
    assert {i["severity"] for i in items} == set(corpus.LEVELS)
    assert len({i["alert"]["kind"] for i in items}) >= 45
    assert len({i["state"]["alert"] for i in items}) >= 200


def test_the_training_questions_are_the_ones_the_router_asks() -> None:
    (alert,) = parse_body(
        "alertmanager", json.dumps(corpus.examples("dev", 1, "alertmanager")[0]["payload"]).encode()
    ).alerts
    asked = POLICY.request(alert).questions
    trained = corpus.policy_questions(DEFAULT_POLICY)
    assert list(trained) == ["page", "team", "severity"] and set(asked) == set(trained)
    for name, q in trained.items():
        sent = asked[name]
        assert isinstance(sent, NoulQuestion | ChoiceQuestion | ScoreQuestion)
        spec = Spec.from_question(name, sent)
        assert (q.kind, q.instructions) == (spec.kind, spec.instructions)
        if q.kind == "score":  # the engine reads a score's levels as its option names
            assert q.options == spec.descriptions
        else:
            assert (q.options, q.descriptions) == (spec.options, spec.descriptions)
    assert tuple(POLICY.spec.teams) == corpus.TEAMS
    assert tuple(POLICY.spec.severity.levels) == corpus.LEVELS
    # Team descriptions reach the model: the criteria the engine gets carry them.
    assert all(trained["team"].descriptions)


def test_the_kits_logic_is_imported_not_copied() -> None:
    """Option orders, the label fingerprint, the summary and the state, Go's printing: the kit's
    own standard-library modules, not copies (a copy's option_order(2, 2) never returned)."""
    assert corpus.option_order is option_order
    with pytest.raises(ValueError, match="fewer than 3 distinct orders of 2 options"):
        corpus.option_order(2, 2)
    assert (corpus.go_value, corpus.go_labels) == (go_value, go_labels)
    assert corpus.Alert is Alert and corpus.labels_fingerprint is labels_fingerprint


def test_values_decide_severity_and_page_is_critical() -> None:
    by_kind: dict[str, dict[str, list[float]]] = {}
    items = corpus.examples("train", 6000)
    for item in items:
        a = item["alert"]
        assert item["page"] == (item["severity"] == "critical")
        if corpus.kind(a["kind"]).numeric and not a["ambiguous"]:
            by_kind.setdefault(a["kind"], {}).setdefault(a["severity"], []).append(a["num"])
    assert len(by_kind) >= 30
    for kind, levels in by_kind.items():
        # Adjacent levels' values never overlap: the value alone tells the level.
        ordered = [levels[lv] for lv in corpus.LEVELS if lv in levels]
        for lower, higher in pairwise(ordered):
            assert max(lower) < min(higher) or min(lower) > max(higher), kind
    ambiguous = sum(i["alert"]["ambiguous"] for i in items) / len(items)
    assert 0.02 < ambiguous < 0.1
    assert 0.15 < sum(i["page"] for i in items) / len(items) < 0.4


def test_splits_are_deterministic_and_held_out() -> None:
    dev = corpus.examples("dev", 300)
    assert [_text(i["payload"]) for i in dev] == [_text(i["payload"]) for i in corpus.examples("dev", 300)]
    test = corpus.examples("test", 300)
    stream = corpus.train_stream(0, corpus.policy_questions(DEFAULT_POLICY))
    seen = {_text(next(stream)[0]) for _ in range(10_000)}
    for split in (dev, test):
        assert not {_text(i["state"]) for i in split} & seen
    assert not {_text(i["state"]) for i in dev} & {_text(i["state"]) for i in test}
    # SDK-style states are short, so a few coincide by chance; held out all the same.
    sdk = corpus.sdk_examples("test", 300)
    assert sum(_text(i["state"]) in seen for i in sdk) <= 6
    assert [i["state"] for i in sdk[:20]] == [i["state"] for i in corpus.sdk_examples("test", 20)]


def test_the_stream_asks_every_question_of_both_state_shapes() -> None:
    stream = corpus.train_stream(3, corpus.policy_questions(DEFAULT_POLICY))
    reads = [next(stream) for _ in range(3000)]
    tags = Counter(r[6] for r in reads)
    assert {"policy:page", "policy:team", "policy:severity", "sdk:page", "sdk:team", "sdk:severity"} <= set(
        tags
    )
    assert tags["policy:page-as-choice"] > 0
    shapes = Counter(type(r[0]).__name__ for r in reads)
    assert shapes["dict"] > shapes["str"] > 0
    for _state, _kind, instructions, options, descriptions, right, tag in reads:
        assert 0 <= right < len(options) == len(descriptions)
        if tag == "policy:team":
            assert sorted(options) == sorted(corpus.TEAMS) and all(descriptions)
        if tag in ("sdk:team", "sdk:severity"):
            assert instructions is None  # the README's Choice and Score carry none


def test_community_template_descriptions_reach_the_model_as_sent() -> None:
    """The widely copied "VALUE = {{ $value }} / LABELS = {{ $labels }}" descriptions survive the
    router's parser, and print the alert's own value and labels as Go does."""
    seen = 0
    for source in ("alertmanager", "grafana"):
        for item in corpus.examples("test", 400, source):
            description = item["state"].get("annotations", {}).get("description", "")
            if "\n  VALUE = " not in description:
                continue
            seen += 1
            (alert,) = parse_body(source, json.dumps(item["payload"]).encode()).alerts
            assert alert.annotations["description"] == description
            match = re.fullmatch(r"(.+)\n  VALUE = (.+)\n  LABELS = (map\[.*\])", description, re.S)
            assert match, description
            value = go_value(item["alert"]["num"])
            assert match[2] in (value, f"[ var='B' labels={{}} value={value} ]")
            series = item["alert"]["labels"]
            assert match[3] in (go_labels(series), go_labels({"alertname": alert.title, **series}))
            assert all(alert.labels[k] == v for k, v in series.items())  # the map tells the truth
    assert seen >= 40


def test_states_decide_severity_with_shared_words_and_balanced_answers() -> None:
    """State kinds (down, no leader, no healthy backend...) are a large share, critical when
    something is unavailable or data is at risk, and share their words with non-critical alerts;
    teams and pages stay balanced."""
    items = corpus.examples("train", 6000)
    states = [i for i in items if i["alert"]["state_kind"]]
    assert 0.25 < len(states) / len(items) < 0.5
    assert 0.28 < sum(i["page"] for i in items) / len(items) < 0.4
    teams = Counter(i["team"] for i in items)
    assert all(0.25 < teams[t] / len(items) < 0.42 for t in corpus.TEAMS), teams
    for word in ("down", "leader", "unhealthy", "restart", "replicat"):
        levels = {
            i["severity"]
            for i in states
            if word in (i["alert"]["summary"] + " ".join(i["alert"]["words"])).lower()
        }
        assert "critical" in levels and levels - {"critical"}, (word, levels)
    assert {i["alert"]["num"] for i in states if i["alert"]["kind"] == "tech_down" and i["page"]} == {0.0}
    # Owners follow the default policy's descriptions for technologies it does not name.
    owner = {k: t.team for k, t in corpus.TECH.items()}
    assert (owner["etcd"], owner["memcached"], owner["pgbouncer"]) == ("database",) * 3
    assert (owner["consul"], owner["istio"], owner["coredns"]) == ("network",) * 3
    assert (owner["zookeeper"], owner["keycloak"], owner["kafka"]) == ("application",) * 3


PUBLIC_SET = Path(__file__).resolve().parents[3] / "evals" / "alerts" / "awesome-prometheus-alerts.jsonl"


def test_the_catalogue_the_toy_trains_on_shares_no_rule_with_the_eval() -> None:
    evaluated = [json.loads(line) for line in PUBLIC_SET.read_text(encoding="utf-8").splitlines()]
    names = {a["labels"]["alertname"].lower() for e in evaluated for a in e["payload"]["alerts"]}
    texts = {
        a["annotations"]["description"].split("\n  VALUE")[0]
        for e in evaluated
        for a in e["payload"]["alerts"]
    }
    train, dev = corpus.catalogue("train"), corpus.catalogue("dev")
    for row in train + dev:
        assert row["state"]["alert"].lower() not in names, row["rule"]
        assert row["state"]["annotations"]["description"].split("\n  VALUE")[0] not in texts, row["rule"]
    # The dev rules are held out whole (every rendering of a rule is in one split).
    assert not {r["rule"] for r in train} & {r["rule"] for r in dev}
    assert len({r["rule"] for r in dev}) >= 40 and {r["severity"] for r in dev} >= {"warning", "critical"}


def test_catalogue_states_are_what_the_router_reads_with_and_without_severity() -> None:
    rows = corpus.catalogue("dev")[:50]
    for row in rows:
        raw = {
            "status": "firing", "labels": row["state"]["labels"], "annotations": {
                **row["state"]["annotations"], "summary": row["state"]["summary"]},
            "startsAt": row["state"]["started_at"], "fingerprint": "0",
        }  # fmt: skip
        (alert,) = parse_body("alertmanager", json.dumps({"alerts": [raw]}).encode()).alerts
        assert render(POLICY.request(alert).state) == _text(row["state"])
        stripped = without_severity(alert)
        assert "severity" in alert.labels and "severity" not in stripped.labels
        assert render(POLICY.request(stripped).state) == _text(corpus.unlabelled(row["state"]))


def test_catalogue_reads_ask_page_and_severity_with_the_rules_answer() -> None:
    policy = corpus.policy_questions()
    reads = list(itertools.islice(corpus.catalogue_stream(0, policy, lambda: 0.0), 400))
    by_alert = {r["state"]["alert"]: r["severity"] for r in corpus.catalogue("train")}
    assert {r[-1] for r in reads} == {"catalogue:page", "catalogue:severity"}
    unlabelled = 0
    for state, _kind, _instr, options, _desc, right, tag in reads:
        severity = by_alert[state["alert"]]
        unlabelled += "severity" not in state.get("labels", {})
        if tag == "catalogue:page":
            assert options[right] == ("yes" if severity == "critical" else "no")
        else:
            assert options[right] == severity
    assert 120 < unlabelled < 280  # about half without the label


DRAWER_NAME = r'"(?:more|show|labels|draw|info|warning|error|critical)": "([a-z0-9_]+)"'  # as JSON


def test_the_data_names_only_drawers_that_exist_and_every_drawer_is_named() -> None:
    """data/*.toml refers to the named drawers of facts_*.py by name: each name resolves (building
    every kind resolves them all) and no drawer is left that the data never names."""
    data = SCRIPTS / "alert_corpus" / "data"
    named = set()
    for name in ("kinds", "states"):
        text = json.dumps(tomllib.loads((data / f"{name}.toml").read_text()))
        named |= set(
            re.findall(r'"(?:more|show|labels|draw|info|warning|error|critical)": "([a-z0-9_]+)"', text)
        )
    drawers = set()
    for module in ("facts_hosts", "facts_data", "facts_edge", "facts_states"):
        drawers |= set(importlib.import_module(f"alert_corpus.{module}").DRAWERS)
    assert drawers <= named, drawers - named
    assert len(corpus.kinds()) == 75 and len({k.key for k in corpus.kinds()}) == 75
