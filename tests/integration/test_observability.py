"""Probes, Prometheus metrics and JSON logs of the running stack."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Stack
from tests.helpers import ALERT_QUESTIONS, decision

pytestmark = pytest.mark.engine


def test_probes(stack: Stack) -> None:
    assert httpx.get(f"{stack.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{stack.url}/readyz").json() == {"status": "ready"}


def test_metrics_count_decisions_reads_and_errors(client: httpx.Client, stack: Stack) -> None:
    before = httpx.get(f"{stack.url}/metrics").text
    assert client.post(
        "/v1/systemone", json=decision(ALERT_QUESTIONS, read_policy={"mode": "debias"})
    ).is_success
    assert (
        client.post("/v1/systemone", json={"model": "nope", "state": "x", "questions": {}}).status_code == 422
    )
    text = httpx.get(f"{stack.url}/metrics").text
    assert (
        _value(text, "dgemma_decision_seconds_count") == _value(before, "dgemma_decision_seconds_count") + 1
    )
    # debias: three reads each for the three questions
    assert _value(text, "dgemma_engine_reads_per_question_sum") - _value(
        before, "dgemma_engine_reads_per_question_sum"
    ) == pytest.approx(9.0)
    assert _value(text, 'dgemma_errors_total{status="422"}') >= 1


def _value(text: str, sample: str) -> float:
    """A sample's value (0 when absent), e.g. `dgemma_errors_total{status="422"}`."""
    name, _, labels = sample.partition("{")
    want = dict(kv.split("=") for kv in labels.rstrip("}").split(",") if kv)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v.strip('"') for k, v in want.items()):
                return float(s.value)
    return 0.0
