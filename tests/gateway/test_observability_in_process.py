"""Metrics and logs of the gateway: in process, and `dgemma serve` as a real process."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.core.net import free_port
from app.core.observability import LOGGERS, TRACE_FIELD, configure_logging
from app.core.polling import wait_http_ok
from devtools.harness.local_stack import ROOT
from tests.helpers.gateway import ALERT_QUESTIONS, AppFactory, decision

pytestmark = pytest.mark.inprocess


def _value(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


async def test_metrics_count_decisions_reads_and_errors(make_app: AppFactory) -> None:
    _, gw = make_app()
    ok = await gw.post("/v1/systemone", json=decision(ALERT_QUESTIONS, read_policy={"mode": "debias"}))
    assert ok.status_code == 200
    bad = await gw.post("/v1/systemone", json={"model": "nope", "state": "x", "questions": {}})
    assert bad.status_code == 422
    text = (await gw.get("/metrics")).text
    assert _value(text, "dgemma_decision_seconds_count") == 1
    assert _value(text, "dgemma_engine_reads_per_question_sum") == 9  # debias: three reads each
    assert _value(text, "dgemma_errors_total", status="422") == 1
    assert _value(text, "dgemma_http_responses_total", route="/v1/systemone", status="200") == 1


@pytest.fixture
def json_logs(capsys: pytest.CaptureFixture[str]) -> Iterator[pytest.CaptureFixture[str]]:
    saved = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).level) for n in LOGGERS}
    configure_logging("INFO", project="proj-1")
    yield capsys
    for name, (handlers, level) in saved.items():
        logging.getLogger(name).handlers[:] = handlers
        logging.getLogger(name).setLevel(level)


async def test_access_lines_carry_request_id_severity_and_trace(
    make_app: AppFactory, json_logs: pytest.CaptureFixture[str]
) -> None:
    _, gw = make_app(api_keys="top-secret-key", allow_any_key=False)
    trace = "105445aa7843bc8bf206b12000100000"
    r = await gw.get(
        "/v1/models",
        headers={"authorization": "Bearer top-secret-key", "x-cloud-trace-context": f"{trace}/1;o=1"},
    )
    assert r.status_code == 200
    err = json_logs.readouterr().err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    (access,) = [e for e in lines if e["message"] == "GET /v1/models 200"]
    assert access["request_id"] == r.headers["x-typesafe-request-id"]
    assert access["severity"] == "INFO" and access["status"] == 200
    assert access[TRACE_FIELD] == f"projects/proj-1/traces/{trace}"
    assert "top-secret-key" not in err


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "serve", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "DGEMMA_ENGINE_URL": f"http://127.0.0.1:{free_port()}", **env},
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_logs_its_configuration_redacted_as_json(tmp_path: Path) -> None:
    port = free_port()
    proc = _serve({"DGEMMA_API_KEYS": "k-very-secret", "DGEMMA_READ_POLICY": "debias"}, port)
    try:
        assert wait_http_ok(f"http://127.0.0.1:{port}/healthz", 30, abort=lambda: proc.poll() is not None)
        r = httpx.get(f"http://127.0.0.1:{port}/v1/models", headers={"authorization": "Bearer k-very-secret"})
        assert r.status_code == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert lines and all("severity" in e and "time" in e for e in lines), err[-2000:]
    config = next(e for e in lines if e["message"] == "configuration")["gateway"]
    assert config["mode"] == "debias" and config["api_keys"] == ["**********"]
    assert "k-very-secret" not in err
    assert any(e["message"] == "auth: 1 API key(s) accepted" for e in lines)
    assert not [line for line in err.splitlines() if line.strip() and not line.startswith("{")], "only JSON"


def test_serve_without_keys_refuses_unless_explicitly_open() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "serve", "--port", str(free_port())],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("DGEMMA_")},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "no API keys" in done.stderr and "DGEMMA_ALLOW_ANY_KEY=true" in done.stderr
