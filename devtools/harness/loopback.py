"""Servers on loopback for tests and benchmarks: a free port, a recording HTTP server answering
from a function, and the start of a real binary on a free port until it is ready.

- `free_port()`: app.core.net's, the one free-port helper of the kit.
- `serve(answer)`: a threaded HTTP server on a free port that records every request (`Seen`) and
  replies with `answer(request)`; the fakes of devtools/harness/ are made of it (metadata.py's
  identity endpoints, alertrig.py's receivers and proxy).
- `start_until_ready(start, ...)`: start a server on a free port and wait for its ready path; a
  start that lost its port to another process before binding it is started again on another
  (Alertmanager's and Prometheus's harnesses).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from app.core.net import free_port as free_port  # the one free-port helper, re-exported
from app.core.polling import wait_http_ok


@dataclass(frozen=True)
class Seen:
    """One request a fake server answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes


class Recorder:
    """The requests a server answered, in order (its threads add them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[Seen] = []

    def add(self, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)

    @property
    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)


class _Handler(BaseHTTPRequestHandler):
    """Reads the request, records it, and asks the server's `answer` for the reply."""

    server: RecordingServer

    def _handle(self) -> None:
        split = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        seen = Seen(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
        )
        self.server.recorder.add(seen)
        status, headers, body = self.server.answer(seen)
        try:
            self.send_response(status)
            for name, value in {**headers, "content-length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up (Locust stopping its users at the end of a phase)

    do_GET = do_POST = _handle

    def log_message(self, *args: object) -> None:
        pass


Reply = tuple[int, dict[str, str], bytes]  # status, headers, body
Answer = Callable[[Seen], Reply]


class RecordingServer(ThreadingHTTPServer):
    """A threaded HTTP server on a free loopback port: `answer` replies, `requests` is what came."""

    daemon_threads = True
    request_queue_size = 128  # a Locust swarm connects at once; the default backlog of 5 drops SYNs

    def __init__(self, answer: Answer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.recorder = Recorder()
        self.answer = answer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def requests(self) -> list[Seen]:
        return self.recorder.requests


@contextmanager
def serve(answer: Answer) -> Iterator[RecordingServer]:
    """A recording server answering with `answer(request)` (called on the server's threads)."""
    server = RecordingServer(answer)
    # A short poll interval: shutdown() waits for it, once per test.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="recording-server", daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def json_reply(status: int, data: Any, headers: dict[str, str] | None = None) -> Reply:
    return status, {"content-type": "application/json", **(headers or {})}, json.dumps(data).encode()


Process = subprocess.Popen[bytes]


def start_until_ready(
    start: Callable[[int], Process],
    stop: Callable[[Process], None],
    log_path: Path,
    *,
    ready_path: str,
    timeout_s: float,
    name: str,
    tries: int = 3,
) -> tuple[Process, str]:
    """`start(port)` on a free loopback port (the process appends its output to `log_path`) until GET
    `ready_path` answers 200; the process and its URL. free_port() can lose its port to another
    process before the server binds it: a start that logged "address already in use" is stopped and
    tried again on another port, `tries` times in all. RuntimeError with what it logged otherwise."""
    tail = ""
    for _ in range(tries):
        offset = log_path.stat().st_size if log_path.exists() else 0
        port = free_port()
        proc = start(port)
        url = f"http://127.0.0.1:{port}"
        try:
            if wait_http_ok(f"{url}{ready_path}", timeout_s, interval_s=0.1, abort=_exited(proc)):
                return proc, url
            tail = log_path.read_bytes()[offset:].decode(errors="replace")[-4000:]
        except BaseException:
            stop(proc)
            raise
        stop(proc)
        if "address already in use" not in tail:
            raise RuntimeError(f"{name} did not start; its log:\n{tail}")
    raise RuntimeError(f"{name} found no free port; its log:\n{tail}")


def _exited(proc: Process) -> Callable[[], bool]:
    return lambda: proc.poll() is not None
