"""The Locust gate on the real local stack: reports, a missed target, and malformed bodies."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from devtools.harness.local_stack import ROOT, wait_idle
from devtools.harness.local_stack import LocalStack as Stack
from tests.helpers.gateway import GatewayFactory

pytestmark = [pytest.mark.integration, pytest.mark.engine]


@pytest.fixture(scope="module", autouse=True)
def idle_afterwards(stack: Stack) -> Iterator[None]:
    """Locust stops its users, but the gateway still finishes what they queued: wait for that, so
    later tests see an idle engine."""
    yield
    wait_idle(stack.url)


def _gate(
    host: str, out: Path | str, *extra: str, cwd: Path = ROOT, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", "loadtest", "--host", host, "--profile", "cpu-smoke",
         "--out", str(out), *extra],
        cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_cpu_smoke_gate_writes_every_report(stack: Stack, tmp_path: Path) -> None:
    """Run from wherever the user stands: a relative --out lands under the working directory."""
    done = _gate(
        stack.url,
        "reports/gate",
        "--engine-url",
        stack.engine_url,
        "--latency-seconds",
        "5",
        "--throughput-seconds",
        "8",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    tmp_path = tmp_path / "reports/gate"
    for phase in ("latency", "throughput"):
        figures = json.loads((tmp_path / f"{phase}_figures.json").read_text())
        assert figures["requests"] > 0 and figures["failures"] == 0 and figures["exceptions"] == []
        with (tmp_path / f"{phase}_stats.csv").open() as f:
            rows = {r["Name"]: r for r in csv.DictReader(f)}
        assert f"systemone [{phase}]" in rows
        with (tmp_path / f"{phase}_stats_history.csv").open() as f:
            assert any(r["Name"] == "Aggregated" for r in csv.DictReader(f))
        assert "locust" in (tmp_path / f"{phase}.html").read_text().lower()
    png = (tmp_path / "chart.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("# Load-test gate: cpu-smoke — PASS")
    for name in (
        "latency_p50_ms",
        "latency_p95_ms",
        "throughput_rps",
        "throughput_decisions_per_s",
        "cold start",
    ):
        assert name in summary
    assert "cost per 1,000 decisions" in summary and "gateway overhead vs the raw engine" in summary


def test_an_impossible_target_fails_the_gate_by_name(stack: Stack, tmp_path: Path) -> None:
    done = _gate(
        stack.url,
        tmp_path,
        "--target",
        "latency_p95_ms=1",
        "--latency-seconds",
        "3",
        "--throughput-seconds",
        "3",
    )
    assert done.returncode == 1
    assert "latency_p95_ms" in done.stderr and "above the target of 1.0" in done.stderr
    assert "FAIL" in (tmp_path / "summary.md").read_text()


def test_the_gate_sends_its_key_everywhere(gateway_factory: GatewayFactory, tmp_path: Path) -> None:
    url = gateway_factory(api_keys="gate-key", allow_any_key=False)
    short = ("--latency-seconds", "2", "--throughput-seconds", "2", "--warmup-seconds", "5")
    done = _gate(url, tmp_path / "ok", *short, DGEMMA_LOADTEST_API_KEY="gate-key")
    assert done.returncode == 0, done.stdout + done.stderr
    for phase in ("latency", "throughput"):
        figures = json.loads((tmp_path / "ok" / f"{phase}_figures.json").read_text())
        assert figures["requests"] > 0 and figures["failures"] == 0
    refused = _gate(url, tmp_path / "no-key", *short)
    assert refused.returncode == 1
    assert "load-test gate: warm-up: no valid decision" in refused.stderr and "HTTP 401" in refused.stderr


@pytest.fixture
def corrupting_proxy(stack: Stack) -> Iterator[str]:
    """A real HTTP proxy to the gateway that breaks every decision after the first (a bad revision)."""
    seen = {"decisions": 0}

    class Proxy(BaseHTTPRequestHandler):
        def _reply(self, r: httpx.Response, body: bytes) -> None:
            try:
                self.send_response(r.status_code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # Locust hung up at the end of a phase

        def do_GET(self) -> None:
            r = httpx.get(f"{stack.url}{self.path}")
            self._reply(r, r.content)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["content-length"]))
            headers = {"content-type": "application/json"}
            r = httpx.post(f"{stack.url}{self.path}", content=raw, headers=headers, timeout=120)
            seen["decisions"] += 1
            data = r.json()
            if seen["decisions"] > 1:
                for answer in data.get("answers", {}).values():
                    if "probabilities" in answer:
                        answer["probabilities"] = {k: 0.9 for k in answer["probabilities"]}
                    if "noul" in answer:
                        answer["noul"] = 1.7
            self._reply(r, json.dumps(data).encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_malformed_bodies_fail_validation(corrupting_proxy: str, tmp_path: Path) -> None:
    done = _gate(corrupting_proxy, tmp_path, "--latency-seconds", "3", "--throughput-seconds", "3")
    assert done.returncode == 1, done.stdout
    assert "failure_ratio" in done.stderr
    with (tmp_path / "latency_failures.csv").open() as f:
        errors = " ".join(r["Error"] for r in csv.DictReader(f))
    assert "noul is not a probability" in errors  # a 200 with garbage counts as a failure
