"""A sweep's mix (train_toy.py --mix, alert_corpus.configure): entries of alert_corpus/data/weights.toml
laid over the file's for every draw that follows, refused when they name nothing, and gone again
when configured away (the default draws depend on their seeds alone:
tests/deploy/models/test_alert_corpus_draws.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from types import ModuleType

import pytest

from deploy.devstack.stack import script_module

pytestmark = pytest.mark.unit


@pytest.fixture
def corpus() -> Iterator[ModuleType]:
    module = script_module("alert_corpus")
    try:
        yield module
    finally:
        module.configure()  # the data as it is, for the tests that follow


def _tags(corpus: ModuleType, n: int = 300) -> list[str]:
    policy = corpus.policy_questions(corpus.POLICY)
    return [read[6] for read in itertools.islice(corpus.train_stream(0, policy), n)]


def test_a_mix_changes_the_draws_and_configuring_it_away_restores_them(corpus: ModuleType) -> None:
    default = _tags(corpus)
    weights = [k.weight for k in corpus.kinds()]
    disk = corpus.kind("host_disk").weight  # data/weights.toml: host_disk = 1.2
    assert any(t.startswith("catalogue:") for t in default)
    corpus.configure({"catalogue_share": 0, "question_weights": {"page": 0, "severity": 0}})
    mixed = _tags(corpus)
    assert not any(t.startswith("catalogue:") for t in mixed)
    assert {t.split(":")[1] for t in mixed} == {"team"}
    assert corpus.weights_table()["question_weights"] == {"page": 0.0, "team": 0.55, "severity": 0.0}
    corpus.configure({"host_weights": {"host_disk": 4.0}})
    assert corpus.kind("host_disk").weight == pytest.approx(disk / 1.2 * 4.0)
    corpus.configure()
    assert _tags(corpus) == default
    assert [k.weight for k in corpus.kinds()] == weights


@pytest.mark.parametrize(
    ("mix", "message"),
    [
        ({"catalogue_sahre": 0.3}, "mix.catalogue_sahre: no such entry (known: ambiguous, catalogue_share, "),
        (
            {"question_weights": {"tema": 0.6}},
            "mix.question_weights.tema: no such entry (known: page, team, ",
        ),
        ({"host_weights": 2.0}, "mix.host_weights: a table is needed, got 2.0"),
        ({"catalogue_share": "0.3"}, "mix.catalogue_share: a number is needed, got '0.3'"),
        ({"catalogue_share": True}, "mix.catalogue_share: a number is needed, got True"),
    ],
)
def test_a_mix_naming_no_entry_of_the_weights_is_refused_and_changes_nothing(
    corpus: ModuleType, mix: dict[str, object], message: str
) -> None:
    corpus.configure({"catalogue_share": 0.3})
    with pytest.raises(ValueError) as refused:
        corpus.configure(mix)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    assert corpus.weights_table()["catalogue_share"] == 0.3
