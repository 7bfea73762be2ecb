"""The loopback servers (devtools/harness/loopback.py): a recording server answers from its function
and records what came; a real process started on a free port is ready once its path answers, is
started again on another port when it lost its port, and is refused with its log otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from devtools.harness.loopback import Seen, json_reply, serve, start_until_ready

pytestmark = pytest.mark.integration


def test_a_recording_server_answers_and_records() -> None:
    def answer(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        return json_reply(201, {"path": seen.path})

    with serve(answer) as server:
        done = httpx.post(f"{server.url}/hook?x=1", content=b"body", headers={"x-test": "1"}, timeout=5)
    assert (done.status_code, done.json()) == (201, {"path": "/hook"})
    [seen] = server.requests
    assert (seen.method, seen.path, seen.query, seen.body) == ("POST", "/hook", {"x": ["1"]}, b"body")
    assert seen.headers["x-test"] == "1"


def _spawn(log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, *args], stdout=out, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=10)


def test_a_start_that_lost_its_port_is_started_again_on_another(tmp_path: Path) -> None:
    log, ports = tmp_path / "server.log", []

    def start(port: int) -> subprocess.Popen[bytes]:
        ports.append(port)
        if len(ports) == 1:  # as Alertmanager logs it when another process took the port first
            return _spawn(log, "-c", "print('listen tcp: bind: address already in use', flush=True)")
        return _spawn(log, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(tmp_path))

    proc, url = start_until_ready(start, _stop, log, ready_path="/", timeout_s=20, name="the server")
    try:
        assert len(ports) == 2 and url == f"http://127.0.0.1:{ports[1]}"
        assert httpx.get(url, timeout=5).status_code == 200
    finally:
        _stop(proc)


def test_a_start_that_fails_otherwise_is_refused_with_its_log(tmp_path: Path) -> None:
    log, starts = tmp_path / "server.log", []

    def start(port: int) -> subprocess.Popen[bytes]:
        starts.append(port)
        return _spawn(log, "-c", "print('bad config: no receivers', flush=True)")

    with pytest.raises(RuntimeError) as refused:
        start_until_ready(start, _stop, log, ready_path="/", timeout_s=20, name="the server")
    assert str(refused.value).startswith("the server did not start; its log:\n")
    assert "bad config: no receivers" in str(refused.value) and len(starts) == 1
