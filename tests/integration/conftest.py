"""Fixtures of the deploy tests: the GCS emulator, a gateway standing in for the deployed service, the
alert router standing in for the deployed router, a small checkpoint, and a fake project
(tests/helpers.py `Cloud`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import storage

from app.gateway.main import create_app
from deploy.runtime.weights import client_from_env
from devtools.gcs import fake_gcs
from tests.helpers import WEIGHTS_BUCKET, Cloud, ScriptedEngine, gateway_settings, serving


@pytest.fixture(scope="module")
def gcs_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_gcs(tmp_path_factory.mktemp("gcs")) as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("STORAGE_EMULATOR_HOST", url)
        client_from_env("test").create_bucket(WEIGHTS_BUCKET)  # what terraform would have made
        yield url


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[storage.Client]:
    """A client of a fresh emulator with an empty bucket `weights`, for the weights and cache tests."""
    with fake_gcs(tmp_path_factory.mktemp("gcs")) as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("STORAGE_EMULATOR_HOST", url)
        client = client_from_env("test")
        client.create_bucket("weights")
        yield client


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    """The deployed service, as far as the deploy can tell: a real gateway on loopback (engine scripted)."""
    with serving(create_app(gateway_settings(), engine=ScriptedEngine())) as url:
        yield url


@pytest.fixture(scope="module")
def router(service: str) -> Iterator[str]:
    """The deployed alert router: the real app, its senders' tokens set, asking the service above."""
    from app.alerts.main import create_router_app
    from app.alerts.settings import AlertRouterSettings

    settings = AlertRouterSettings(
        alerts_gateway_url=service,
        alerts_gateway_api_key="any",
        alerts_alertmanager_token="am",
        alerts_grafana_token="gr",
        alerts_cloud_monitoring_token="cm",
        log_level="WARNING",
    )
    with serving(create_router_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("ckpt")
    (src / "config.json").write_text('{"model_type": "diffusion_gemma"}')
    (src / "model.safetensors").write_bytes(os.urandom(2**20))
    return src


@pytest.fixture
def cloud(tmp_path: Path, service: str, router: str, gcs_url: str, checkpoint: Path) -> Cloud:
    return Cloud(tmp_path, service, gcs_url, checkpoint, router)
