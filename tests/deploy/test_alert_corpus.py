"""The realistic alerts the toy trains on (deploy/models/scripts/alert_corpus.py): each sender's
payload goes through the router's own parser and request to exactly the state text the generator
trains on, the training questions are the default policy's, values decide severity, and the splits
are deterministic and held out."""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from types import ModuleType
from typing import Any

import pytest

from app.alerts.formats import parse_body
from app.alerts.policy import Policy
from app.alerts.records import SOURCES
from app.alerts.settings import DEFAULT_POLICY
from app.gateway.decisions.plan import Spec, option_order, render
from app.jev.wire import ChoiceQuestion, NoulQuestion, ScoreQuestion
from deploy.devstack.stack import script_module

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
    for k in range(4):  # the gateway's re-read orders, which training copies
        assert corpus.option_order(4, k) == option_order(4, k)


def test_values_decide_severity_and_page_is_critical() -> None:
    by_kind: dict[str, dict[str, list[float]]] = {}
    items = corpus.examples("train", 6000)
    for item in items:
        a = item["alert"]
        assert item["page"] == (item["severity"] == "critical")
        if corpus.BY_KEY[a["kind"]].numeric and not a["ambiguous"]:
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
