"""`dgemma alerts replay` and `eval` reach a private (Cloud Run) gateway from an operator's machine:
`--id-token gcloud` sends gcloud's ID token (a stand-in gcloud; a laptop's user credentials cannot
mint one through google-auth) in `X-Serverless-Authorization`, beside the API key, on every call;
`--id-token off` sends none. The gateway is the real app behind a recording proxy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.gateway.main import create_app
from devtools.harness.alertrig import Proxy
from devtools.harness.loopback import serve as recording
from devtools.harness.metadata import id_token
from tests.helpers.gateway import ScriptedEngine, gateway_settings, serving

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "alerts"
# gcloud's token for a user account: addressed to gcloud's own client, which Cloud Run accepts.
TOKEN = id_token("32555940559.apps.googleusercontent.com", "sre@example.com")


@pytest.fixture(scope="module")
def front() -> Iterator[Proxy]:
    """The real gateway (scripted engine) behind a proxy that keeps every request's headers."""
    with serving(create_app(gateway_settings(), engine=ScriptedEngine())) as gateway:
        proxy = Proxy(gateway)
        with recording(proxy.answer) as server:
            proxy.url = server.url  # type: ignore[attr-defined]
            yield proxy


def _gcloud(tmp_path: Path) -> dict[str, str]:
    """PATH with a stand-in gcloud that prints an ID token for `auth print-identity-token`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "gcloud"
    script.write_text(
        '#!/bin/sh\n[ "$1 $2" = "auth print-identity-token" ] && { echo ' + TOKEN + "; exit 0; }\n"
        'echo "unexpected: $*" >&2; exit 2\n'
    )
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DGEMMA_")}
    return {**env, "PATH": f"{bin_dir}:{env['PATH']}", "DGEMMA_ALERTS_GATEWAY_API_KEY": "router-key",
            "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "none.json")}  # fmt: skip


def _decisions(proxy: Proxy) -> list[dict[str, str]]:
    seen = list(proxy.headers)
    proxy.headers.clear()
    return seen


def _dgemma(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", "alerts", *args], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_replay_and_eval_send_gclouds_id_token_beside_the_key(front: Proxy, tmp_path: Path) -> None:
    env = _gcloud(tmp_path)
    url = front.url  # type: ignore[attr-defined]
    deliveries = tmp_path / "deliveries.jsonl"
    payload = json.loads((DATA / "alertmanager_firing.json").read_text())
    deliveries.write_text(json.dumps({"source": "alertmanager", "payload": payload}) + "\n")
    done = _dgemma(env, "replay", str(deliveries), "--gateway", url, "--id-token", "gcloud")
    assert done.returncode == 0, done.stderr
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(
        "".join((ROOT / "evals" / "alerts" / "handwritten.jsonl").read_text().splitlines(True)[:3])
    )
    done = _dgemma(
        env, "eval", str(labelled), "--gateway", url, "--id-token", "gcloud", "--out", str(tmp_path / "e")
    )
    assert done.returncode == 0, done.stderr
    seen = _decisions(front)
    assert len(seen) >= 2 + 3
    for headers in seen:
        assert headers.get("x-serverless-authorization") == f"Bearer {TOKEN}", headers
        assert headers.get("authorization") == "Bearer router-key", headers


def test_off_sends_no_id_token(front: Proxy, tmp_path: Path) -> None:
    env = _gcloud(tmp_path)
    deliveries = tmp_path / "deliveries.jsonl"
    payload = json.loads((DATA / "alertmanager_firing.json").read_text())
    deliveries.write_text(json.dumps({"source": "alertmanager", "payload": payload}) + "\n")
    url = front.url  # type: ignore[attr-defined]
    done = _dgemma(env, "replay", str(deliveries), "--gateway", url, "--id-token", "off")
    assert done.returncode == 0, done.stderr
    seen = _decisions(front)
    assert seen and all("x-serverless-authorization" not in h for h in seen)
