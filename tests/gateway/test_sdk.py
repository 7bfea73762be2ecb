"""The official `typesafe-sdk`, unchanged, pointed at the gateway through TYPESAFE_BASE_URL."""

from __future__ import annotations

import math
from collections.abc import Iterator

import httpx2
import pytest
from typesafe_sdk import (
    AsyncTypeSafeClient,
    Choice,
    ChoiceAnswer,
    Noul,
    NoulAnswer,
    Score,
    ScoreAnswer,
    TypeSafeBadRequestError,
    TypeSafeClient,
    TypeSafeNotFoundError,
)

from devtools.harness.local_stack import LocalStack as Stack

pytestmark = [pytest.mark.integration, pytest.mark.engine]

QUESTIONS: dict[str, Noul | Choice | Score] = {
    "page": Noul(instructions="Should on-call be paged?"),
    "team": Choice(criteria={"db": None, "network": "DNS, load balancers", "app": None}),
    "severity": Score(criteria=["low", "medium", "high"]),
}


@pytest.fixture(scope="module")
def sdk_env(stack: Stack, monkeypatch_module: pytest.MonkeyPatch) -> None:
    monkeypatch_module.setenv("TYPESAFE_BASE_URL", stack.url)
    monkeypatch_module.setenv("TYPESAFE_API_KEY", "sk-local-anything")


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def sdk(sdk_env: None) -> Iterator[TypeSafeClient]:
    with TypeSafeClient(timeout=60) as c:
        yield c


def _check_alert_answers(answers: dict[str, object]) -> None:
    assert list(answers) == ["page", "team", "severity"]
    page, team, severity = answers["page"], answers["team"], answers["severity"]
    assert isinstance(page, NoulAnswer) and 0.0 <= page.noul <= 1.0
    assert isinstance(team, ChoiceAnswer)
    assert math.isclose(sum(team.probabilities.values()), 1.0, abs_tol=1e-6)
    assert team.choice == max(team.probabilities, key=team.probabilities.__getitem__)
    assert 0.0 <= team.confidence <= 1.0
    assert isinstance(severity, ScoreAnswer)
    assert severity.legend == {0: "low", 1: "medium", 2: "high"}
    assert math.isclose(sum(severity.probabilities.values()), 1.0, abs_tol=1e-6)
    expected = sum(i * p for i, p in severity.probabilities.items())
    assert math.isclose(severity.score, expected, abs_tol=1e-9)


def test_sync_system_one(sdk: TypeSafeClient, stack: Stack) -> None:
    response = sdk.system_one(state="Disk usage at 97% on db-1", questions=QUESTIONS)
    _check_alert_answers(dict(response.answers))
    assert response.model == stack.served_model  # concrete name, never the alias
    assert response.usage.input_tokens is not None and response.usage.input_tokens > 0
    assert len(response.request_id) == 32


async def test_async_system_one(sdk_env: None) -> None:
    async with AsyncTypeSafeClient(timeout=60) as client:
        response = await client.system_one(state={"alert": "disk 97%", "host": "db-1"}, questions=QUESTIONS)
    _check_alert_answers(dict(response.answers))


def test_models_list(sdk: TypeSafeClient, stack: Stack) -> None:
    models = sdk.models.list()
    names = [m.name for m in models.models]
    assert names[:3] == [stack.served_model, "jev-latest", "jev-preview"]
    for m in models.models:
        assert "random" in m.description  # the local model says what it is
        assert len(m.release_date) == 10 and m.release_date[4] == "-"


def test_zstd_body_over_1kb(sdk_env: None) -> None:
    sent: list[httpx2.Request] = []
    http = httpx2.Client(timeout=60, event_hooks={"request": [sent.append]})
    with TypeSafeClient(compression="zstd", http_client=http) as client:
        state = "Disk usage climbing on db-1. " * 40
        response = client.system_one(state=state, questions={"page": Noul(instructions="Page?")})
    assert sent[-1].headers["content-encoding"] == "zstd"
    assert len(state) > 1024 > len(sent[-1].content)
    assert 0.0 <= response.answers["page"].noul <= 1.0  # type: ignore[union-attr]


def test_forty_option_choice(sdk: TypeSafeClient) -> None:
    options = {f"service-{i:02d}": None for i in range(40)}
    answer = sdk.system_one(state="db-1 is down", questions={"svc": Choice(criteria=options)}).answers["svc"]
    assert isinstance(answer, ChoiceAnswer)
    assert list(answer.probabilities) == list(options)
    assert math.isclose(sum(answer.probabilities.values()), 1.0, abs_tol=1e-6)
    assert answer.choice == max(answer.probabilities, key=answer.probabilities.__getitem__)


def test_one_level_and_eleven_level_scores(sdk: TypeSafeClient) -> None:
    one = sdk.system_one(state="x", questions={"s": Score(criteria=["only"])}).answers["s"]
    assert isinstance(one, ScoreAnswer)
    assert (one.score, one.confidence, one.probabilities) == (0.0, 1.0, {0: 1.0})
    with pytest.raises(TypeSafeBadRequestError, match="at most 10 levels"):
        sdk.system_one(state="x", questions={"s": Score(criteria=[str(i) for i in range(11)])})


def test_two_hundred_questions(sdk: TypeSafeClient) -> None:
    questions = {f"q{i}": Noul(instructions=f"Is check {i} failing?") for i in range(200)}
    # 200 reads take about a minute on the CPU engine (four engine calls of 50 reads).
    response = sdk.system_one(
        state="Nightly checks report",
        questions=questions,
        extra_body={"read_policy": {"mode": "single"}},
        timeout=240,
    )
    assert list(response.answers) == list(questions)
    assert all(isinstance(a, NoulAnswer) for a in response.answers.values())


def test_object_and_array_criteria(sdk: TypeSafeClient) -> None:
    levels = [{"level": "low", "when": ["info"]}, ["medium", "degraded"], "high"]
    response = sdk.system_one(
        state=["alert", {"host": "db-1"}],
        questions={
            "severity": Score(criteria=levels),
            "team": Choice(
                instructions={"ask": "which team"}, criteria={"db": {"owns": ["postgres"]}, "net": ["dns"]}
            ),
        },
    )
    severity = response.answers["severity"]
    assert isinstance(severity, ScoreAnswer)
    assert severity.legend == dict(enumerate(levels))  # legend values are the original items


def test_unknown_model_is_404(sdk_env: None) -> None:
    with TypeSafeClient(model="gpt-4o") as client, pytest.raises(TypeSafeNotFoundError):
        client.system_one(state="x", questions={"p": Noul(instructions="?")})
