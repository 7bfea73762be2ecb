"""JSON log lines carry the request id; keys never reach the logs."""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


def test_access_log_is_json_with_the_request_id(capsys: pytest.CaptureFixture[str]) -> None:
    app = create_app(Settings(api_keys="top-secret-key", log_level="INFO"))  # type: ignore[arg-type]
    with TestClient(app) as client:
        r = client.get("/v1/models", headers={"authorization": "Bearer top-secret-key"})
    assert r.status_code == 200
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    access = [entry for entry in lines if entry["message"] == "GET /v1/models 200"]
    assert access and access[0]["request_id"] == r.headers["x-typesafe-request-id"]
    assert access[0]["level"] == "INFO" and access[0]["status"] == 200
    assert all("top-secret-key" not in json.dumps(entry) for entry in lines)
    logging.getLogger("app").setLevel("WARNING")
