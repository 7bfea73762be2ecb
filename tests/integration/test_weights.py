"""Weights to and from GCS against the real fake-gcs-server emulator (no mock client)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google.cloud import storage

from deploy.localgcs import fake_gcs
from deploy.localstack import free_port
from deploy.weights import MANIFEST, WeightsError, client_from_env, download, upload, verify

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[storage.Client]:
    with fake_gcs(tmp_path_factory.mktemp("gcs")) as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("STORAGE_EMULATOR_HOST", url)
        client = client_from_env("test")
        client.create_bucket("weights")
        yield client


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
        env={**os.environ, "DGEMMA_LOG_LEVEL": "WARNING", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_run_refuses_to_start_the_engine_on_a_bad_checkpoint(
    gcs: storage.Client, checkpoint: Path, tmp_path: Path
) -> None:
    upload(checkpoint, "gs://weights/bad", gcs)
    gcs.bucket("weights").blob("bad/config.json").upload_from_string(b"{}")
    done = _run({"DGEMMA_WEIGHTS_URL": "gs://weights/bad", "DGEMMA_MODEL_DIR": str(tmp_path / "model")})
    assert done.returncode == 2
    assert "gs://weights/bad/config.json does not match" in " ".join(done.stderr.split())
    # baked mode: the same manifest check
    done = _run({"DGEMMA_MODEL_DIR": str(checkpoint)})  # no manifest.json beside the weights
    assert done.returncode == 2 and "manifest.json is missing" in " ".join(done.stderr.split())


@pytest.mark.engine
def test_run_downloads_the_tiny_model_from_gcs_then_serves(gcs: storage.Client, tmp_path: Path) -> None:
    tiny = ROOT / ".cache/model"
    if not (tiny / "model.safetensors").exists():
        pytest.skip("the tiny model is generated by the session stack")
    upload(tiny, "gs://weights/tiny/v1", gcs)
    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "DGEMMA_ENGINE_PORT": str(free_port()),
        "DGEMMA_WEIGHTS_URL": "gs://weights/tiny/v1",
        "DGEMMA_MODEL_DIR": str(tmp_path / "model"),
        "DGEMMA_SERVED_MODEL": "tiny-from-gcs",
        "DGEMMA_LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "run"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("dgemma ready:"):
                break
        body = {
            "model": "jev-latest",
            "state": "x",
            "questions": {"p": {"type": "noul", "instructions": "?"}},
        }
        r = httpx.post(f"http://127.0.0.1:{port}/v1/systemone", json=body, timeout=60)
        assert r.status_code == 200 and r.json()["model"] == "tiny-from-gcs"
        assert verify(tmp_path / "model") == []
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
