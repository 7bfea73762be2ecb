"""Weights to and from GCS against the real fake-gcs-server emulator (no mock client)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from google.cloud import storage

from app.core.net import free_port
from deploy.errors import WeightsError
from deploy.runtime.weights import (
    MANIFEST,
    STAMP,
    download,
    upload,
    verify,
    verify_remote,
)
from devtools.harness.local_stack import ROOT, LocalStack, wait_ready
from tests.helpers.gateway import NOUL, decision

pytestmark = pytest.mark.integration


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "config.json").write_text('{"model_type": "diffusion_gemma"}')
    (src / "model-00001.safetensors").write_bytes(os.urandom(3 * 2**20 + 17))  # sliced below
    (src / "sub" / "tokenizer.json").write_bytes(os.urandom(4096))
    return src


def test_round_trip_with_sliced_download(gcs: storage.Client, checkpoint: Path, tmp_path: Path) -> None:
    manifest = upload(checkpoint, "gs://weights/rt/v1", gcs)
    assert {e.name for e in manifest.files} == {
        "config.json",
        "model-00001.safetensors",
        "sub/tokenizer.json",
    }
    assert gcs.bucket("weights").blob(f"rt/v1/{MANIFEST}").exists()
    seen: list[int] = []
    report = download("gs://weights/rt/v1", tmp_path / "dst", gcs, slice_bytes=2**20, progress=seen.append)
    assert sorted(report.downloaded) == sorted(e.name for e in manifest.files) and not report.skipped
    assert sum(seen) == manifest.total_bytes
    for e in manifest.files:
        assert (tmp_path / "dst" / e.name).read_bytes() == (checkpoint / e.name).read_bytes()
    assert verify(tmp_path / "dst") == []
    assert not list((tmp_path / "dst").rglob("*.partial"))


def test_resume_skips_files_that_verify(gcs: storage.Client, checkpoint: Path, tmp_path: Path) -> None:
    upload(checkpoint, "gs://weights/resume", gcs)
    dst = tmp_path / "dst"
    download("gs://weights/resume", dst, gcs)
    (dst / "sub" / "tokenizer.json").unlink()  # as if the download had been interrupted
    (dst / "config.json").write_text("{}")  # and a file had been damaged
    report = download("gs://weights/resume", dst, gcs)
    assert sorted(report.downloaded) == ["config.json", "sub/tokenizer.json"]
    assert report.skipped == ("model-00001.safetensors",)
    assert verify(dst) == []


def test_corrupted_object_is_refused_by_name(gcs: storage.Client, checkpoint: Path, tmp_path: Path) -> None:
    upload(checkpoint, "gs://weights/corrupt", gcs)
    gcs.bucket("weights").blob("corrupt/sub/tokenizer.json").upload_from_string(b"tampered")
    with pytest.raises(
        WeightsError, match=re.escape("gs://weights/corrupt/sub/tokenizer.json does not match")
    ):
        download("gs://weights/corrupt", tmp_path / "dst", gcs)
    assert not (tmp_path / "dst" / "sub" / "tokenizer.json").exists()


@pytest.mark.parametrize("victim", ["config.json", "model-00001.safetensors"])
def test_missing_object_is_refused_by_name(
    gcs: storage.Client, checkpoint: Path, tmp_path: Path, victim: str
) -> None:
    url = f"gs://weights/missing-{victim[:5]}"
    upload(checkpoint, url, gcs)
    gcs.bucket("weights").blob(f"{url[len('gs://weights/') :]}/{victim}").delete()
    with pytest.raises(WeightsError, match=re.escape(f"{url}/{victim} is in the manifest but missing")):
        download(url, tmp_path / "dst", gcs, slice_bytes=2**20)


def test_no_manifest_means_no_download(gcs: storage.Client, tmp_path: Path) -> None:
    gcs.bucket("weights").blob("half/config.json").upload_from_string("{}")
    with pytest.raises(WeightsError, match=re.escape("no manifest at gs://weights/half/manifest.json")):
        download("gs://weights/half", tmp_path / "dst", gcs)


def test_verify_reports_each_problem(gcs: storage.Client, checkpoint: Path, tmp_path: Path) -> None:
    upload(checkpoint, "gs://weights/verify", gcs)
    dst = tmp_path / "dst"
    download("gs://weights/verify", dst, gcs)
    (dst / "config.json").write_text('{"model_type": "other!!!!!!!!!"}')
    (dst / "sub" / "tokenizer.json").unlink()
    problems = verify(dst)
    assert any(p.startswith("config.json:") for p in problems)
    assert "sub/tokenizer.json: missing" in problems
    assert verify(tmp_path / "nowhere") == [f"{tmp_path / 'nowhere' / MANIFEST} is missing"]


def _run(env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", "run", "--port", str(free_port())],
        cwd=ROOT,
        env={**os.environ, "DGEMMA_LOG_LEVEL": "WARNING", "DGEMMA_ALLOW_ANY_KEY": "true", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _messages(stderr: str) -> str:
    """The messages of the JSON log lines a service writes, joined."""
    return " ".join(json.loads(line)["message"] for line in stderr.splitlines() if line.startswith("{"))


def test_run_refuses_to_start_the_engine_on_a_bad_checkpoint(
    gcs: storage.Client, checkpoint: Path, tmp_path: Path
) -> None:
    upload(checkpoint, "gs://weights/bad", gcs)
    gcs.bucket("weights").blob("bad/config.json").upload_from_string(b"{}")
    done = _run({"DGEMMA_WEIGHTS_URL": "gs://weights/bad", "DGEMMA_MODEL_DIR": str(tmp_path / "model")})
    assert done.returncode == 2
    said = _messages(done.stderr)
    assert "gs://weights/bad/config.json does not match" in said
    assert "refusing to start: the weights in" in said and "the engine was not started" in said
    # baked mode: the same manifest check
    done = _run({"DGEMMA_MODEL_DIR": str(checkpoint)})  # no manifest.json beside the weights
    assert done.returncode == 2 and "manifest.json is missing" in _messages(done.stderr)


def test_run_refuses_without_api_keys_before_touching_the_weights(tmp_path: Path) -> None:
    done = _run({"DGEMMA_ALLOW_ANY_KEY": "false", "DGEMMA_WEIGHTS_URL": "gs://nowhere/x"}, timeout=30)
    assert done.returncode == 2
    assert "no API keys" in _messages(done.stderr) and "weights" not in _messages(done.stderr)


def test_sigterm_interrupts_a_stalled_weights_download(tmp_path: Path) -> None:
    """A bucket that never answers: the supervisor still stops within the grace."""
    stalled = threading.Event()

    class Silent(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            stalled.set()
            threading.Event().wait(60)  # never answers

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    env = {
        **os.environ,
        "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{server.server_address[1]}",
        "DGEMMA_WEIGHTS_URL": "gs://weights/slow",
        "DGEMMA_MODEL_DIR": str(tmp_path / "model"),
        "DGEMMA_ALLOW_ANY_KEY": "true",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "run", "--port", str(free_port())],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert stalled.wait(30), "the weights step never asked for the manifest"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=12) == 0  # Cloud Run's 10 s, plus process exit
        assert subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout == b""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        server.shutdown()


def test_missing_credentials_are_a_named_refusal(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "STORAGE_EMULATOR_HOST"}
    env |= {
        "GCE_METADATA_HOST": f"127.0.0.1:{free_port()}",  # no metadata server: not on Google Cloud
        "GCE_METADATA_IP": f"127.0.0.1:{free_port()}",
        "GOOGLE_APPLICATION_CREDENTIALS": "",
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "weights", "download", "gs://b/p", str(tmp_path / "d")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "weights: no Google credentials for Cloud Storage" in done.stderr
    assert "Traceback" not in done.stderr


def test_permission_denied_is_a_named_refusal(tmp_path: Path) -> None:
    """A real HTTP server answering like GCS to an identity without access."""

    class Forbidden(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"error": {"code": 403, "message": "caller does not have storage.objects.get"}})
            self.send_response(403)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forbidden)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        env = {**os.environ, "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{server.server_address[1]}"}
        done = subprocess.run(
            [sys.executable, "-m", "deploy.cli", "weights", "download", "gs://b/p", str(tmp_path / "d")],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert done.returncode == 2
    assert "weights: permission denied on gs://b/p/manifest.json" in done.stderr
    assert "roles/storage.objectViewer" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.engine
def test_run_downloads_the_tiny_model_from_gcs_then_serves(
    gcs: storage.Client, stack: LocalStack, tmp_path: Path
) -> None:
    tiny = ROOT / ".cache/model"  # generated by the session's stack
    upload(tiny, "gs://weights/tiny/v1", gcs)
    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "DGEMMA_ENGINE_PORT": str(free_port()),
        "DGEMMA_WEIGHTS_URL": "gs://weights/tiny/v1",
        "DGEMMA_MODEL_DIR": str(tmp_path / "model"),
        "DGEMMA_SERVED_MODEL": "tiny-from-gcs",
        "DGEMMA_API_KEYS": "gcs-test-key",
        "DGEMMA_LOG_LEVEL": "INFO",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "run"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert wait_ready(proc, 300), "the stack did not start"
        body = decision(NOUL, state="x")
        headers = {"authorization": "Bearer gcs-test-key"}
        r = httpx.post(f"http://127.0.0.1:{port}/v1/systemone", json=body, headers=headers, timeout=60)
        assert r.status_code == 200 and r.json()["model"] == "tiny-from-gcs"
        assert verify(tmp_path / "model") == []
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert proc.stderr is not None
    lines = [json.loads(line) for line in proc.stderr.read().splitlines() if line.startswith("{")]
    vllm = [e for e in lines if e.get("logger") == "deploy.engine"]
    assert vllm, "vLLM's output reaches the log stream as JSON"
    assert {"INFO", "WARNING"} <= {e["severity"] for e in vllm}
    assert any(e.get("vllm_process") == "APIServer" and e.get("source") for e in vllm)


@contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """No write bit anywhere in `directory` for the block (root still writes: the tests run as root)."""
    for path in (*directory.rglob("*"), directory):
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        yield
    finally:
        for path in (directory, *directory.rglob("*")):
            path.chmod(path.stat().st_mode | 0o200)


def test_a_read_only_stamped_checkpoint_is_checked_by_sizes(
    gcs: storage.Client, checkpoint: Path, tmp_path: Path
) -> None:
    """The image's baked weights: verified at build, read-only after; no 15 GB re-hash at start."""
    upload(checkpoint, "gs://weights/stamped", gcs)
    dst = tmp_path / "baked"
    download("gs://weights/stamped", dst, gcs)
    assert (dst / STAMP).is_file() and verify(dst) == []
    victim = dst / "model-00001.safetensors"
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))  # same size, other contents
    assert verify(dst) == ["model-00001.safetensors: sha256 differs from the manifest"], "writable: hashed"
    with read_only(dst):  # as the image's COPY --chmod=0555 leaves it
        assert verify(dst) == [], "read-only and stamped: sizes only"
        assert verify(dst, full=True) == ["model-00001.safetensors: sha256 differs from the manifest"]
        (dst / "sub").chmod(0o755)
        (dst / "sub" / "tokenizer.json").chmod(0o644)
        (dst / "sub" / "tokenizer.json").write_bytes(b"short")
        (dst / "sub" / "tokenizer.json").chmod(0o444)
        (dst / "sub").chmod(0o555)
        # A size that differs is caught without hashing; then every file is hashed, to report all.
        assert verify(dst) == [
            "model-00001.safetensors: sha256 differs from the manifest",
            "sub/tokenizer.json: 5 bytes, manifest says 4096",
        ]


def test_a_stamp_for_another_manifest_is_not_trusted(
    gcs: storage.Client, checkpoint: Path, tmp_path: Path
) -> None:
    upload(checkpoint, "gs://weights/restamp", gcs)
    dst = tmp_path / "baked"
    download("gs://weights/restamp", dst, gcs)
    (dst / STAMP).write_text(json.dumps({"manifest_sha256": "0" * 64}))
    (dst / "config.json").write_text('{"model_type": "other!!!!!!!!!!"}')  # same length
    with read_only(dst):
        assert verify(dst) == ["config.json: sha256 differs from the manifest"]


def test_the_bucket_is_checked_by_its_own_checksums_without_a_download(
    gcs: storage.Client, checkpoint: Path, tmp_path: Path
) -> None:
    """gcs_fuse mode: Cloud Storage's MD5/CRC32C against the manifest; the mount's sizes."""
    url = "gs://weights/fuse"
    manifest = upload(checkpoint, url, gcs)
    assert all(e.md5 and e.crc32c for e in manifest.files)
    assert verify_remote(url, gcs) == []
    assert verify_remote(url, gcs, mounted=checkpoint) == []  # the mount shows the same files
    gcs.bucket("weights").blob("fuse/sub/tokenizer.json").upload_from_string(os.urandom(4096))  # same size
    assert verify_remote(url, gcs) == [
        "gs://weights/fuse/sub/tokenizer.json: size or checksums differ from the manifest"
    ]
    gcs.bucket("weights").blob("fuse/config.json").delete()
    problems = verify_remote(url, gcs, mounted=tmp_path / "empty-mount")
    assert "gs://weights/fuse/config.json: missing" in problems
    assert any("not visible in the mount" in p for p in problems)


def test_an_old_manifest_without_checksums_is_refused_remotely(gcs: storage.Client, checkpoint: Path) -> None:
    upload(checkpoint, "gs://weights/old", gcs)
    blob = gcs.bucket("weights").blob(f"old/{MANIFEST}")
    old = json.loads(blob.download_as_text())
    for entry in old["files"]:
        del entry["md5"], entry["crc32c"]
    blob.upload_from_string(json.dumps(old))
    problems = verify_remote("gs://weights/old", gcs)
    assert problems and all("manifest has no MD5/CRC32C" in p for p in problems)


def test_the_supervisors_gcs_fuse_step_from_the_command_line(
    gcs: storage.Client, checkpoint: Path, tmp_path: Path
) -> None:
    upload(checkpoint, "gs://weights/cli-fuse", gcs)
    step = [sys.executable, "-m", "deploy.cli", "weights", "verify-remote", "gs://weights/cli-fuse"]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*step, *extra], cwd=ROOT, capture_output=True, text=True)

    assert run("--mounted", str(checkpoint)).returncode == 0
    missing = run("--mounted", str(tmp_path))
    assert missing.returncode == 1 and "not visible in the mount" in missing.stderr
