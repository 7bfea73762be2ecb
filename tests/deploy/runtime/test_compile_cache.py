"""The engine's compile cache: its key, restore (miss, corrupt, unsafe), save, and the supervisor's use
of it (the engine's env, the retry without cache), against a local-directory store. The Cloud Storage
store, create-only against the emulator, is in tests/deploy/runtime/test_compile_cache_gcs.py."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

from app.core.net import free_port
from app.gateway.settings import GatewaySettings
from deploy.runtime import compile_cache as cc
from deploy.runtime.gpu_budget import BIG_CONFIG
from deploy.runtime.settings import SupervisorSettings
from deploy.runtime.supervisor import Supervisor
from tests.helpers.deploy import fake_nvidia_smi

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
ARGV = ["vllm", "serve", "/weights", "--host", "127.0.0.1", "--port", "8100", "--max-num-seqs", "32"]
VERSIONS = {"python": "3.12.3", "vllm": "0.32.0", "torch": "2.9.0", "triton": "3.5.0"}
CONFIG = b'{"model_type": "diffusion_gemma", "hidden_size": 2816}'


def _key(**change: Any) -> str:
    args: dict[str, Any] = {"versions": VERSIONS, "config_json": CONFIG, "argv": ARGV, "gpu": "NVIDIA L4"}
    return cc.cache_key(cc.key_inputs(**(args | change)))


def _fill(cache_dir: Path) -> dict[str, bytes]:
    """Files as the engine would leave them in its four cache directories."""
    files = {
        "vllm/torch_compile_cache/abc/rank_0_0/backbone/model.py": b"graph" * 100,
        "inductor/fxgraph/xy/entry": os.urandom(5000),
        "triton/K3Y/kernel.cubin": os.urandom(20000),
        "cuda/ComputeCache/index": b"\x00\x01",
    }
    for name, data in files.items():
        (cache_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (cache_dir / name).write_bytes(data)
    return files


def _cache(store: Path, cache_dir: Path, key: str = "k" * 20) -> cc.CompileCache:
    return cc.CompileCache(cc.DirStore(store), cache_dir, key, {"gpu": "NVIDIA L4"})


def _files(cache_dir: Path) -> dict[str, bytes]:
    return {
        p.relative_to(cache_dir).as_posix(): p.read_bytes()
        for p in cache_dir.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def _plant(store: Path, key: str, archive: bytes, sha256: str | None = None) -> None:
    """A pointer and its archive, as a save would leave them (unless `sha256` lies)."""
    digest = sha256 or hashlib.sha256(archive).hexdigest()
    (store / "archives").mkdir(parents=True, exist_ok=True)
    (store / "archives" / f"{digest}.tar.zst").write_bytes(archive)
    pointer = {"archive": f"archives/{digest}.tar.zst", "sha256": digest, "size": len(archive)}
    (store / f"{key}.json").write_text(json.dumps(pointer))


def _tar_zst(members: list[tarfile.TarInfo], data: bytes = b"x") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for m in members:
            m.size = len(data) if m.isfile() else 0
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
    return zstandard.ZstdCompressor().compress(buf.getvalue())


# -- the key ---------------------------------------------------------------------------------------


def test_the_key_changes_with_each_input_and_not_with_host_or_port() -> None:
    base = _key()
    changed = [
        _key(versions={**VERSIONS, "vllm": "0.33.0"}),
        _key(versions={**VERSIONS, "torch": "2.10.0"}),
        _key(config_json=CONFIG.replace(b"2816", b"2817")),
        _key(argv=[*ARGV[:-1], "16"]),
        _key(argv=[*ARGV, "--enforce-eager"]),
        _key(gpu="NVIDIA H200"),
    ]
    assert base not in changed and len(set(changed)) == len(changed)
    elsewhere = ["vllm", "serve", "/weights", "--host=0.0.0.0", "--port", "9", "--max-num-seqs", "32"]
    assert _key(argv=elsewhere) == base
    # The same config.json written otherwise is the same model.
    assert _key(config_json=b'{\n  "hidden_size": 2816,\n  "model_type": "diffusion_gemma"\n}') == base
    assert len(base) == 20


def test_versions_come_from_the_engines_own_interpreter(tmp_path: Path) -> None:
    engine_python = ROOT / ".venv-engine/bin/python"
    if not engine_python.exists():
        pytest.skip("no engine environment (make setup creates it)")
    versions = cc.engine_versions([str(engine_python), "launcher.py"])
    assert versions["vllm"] and versions["torch"] and versions["python"]
    # `vllm serve` in the image: the interpreter is the one the script's #! line names.
    script = tmp_path / "vllm"
    script.write_text(f"#!{engine_python}\nraise SystemExit('not run')\n")
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    assert cc.engine_interpreter(["vllm", "serve"], path=env["PATH"]) == [str(engine_python)]
    assert cc.engine_versions(["vllm", "serve"], env) == versions
    # pip's wrapper for an interpreter whose path is too long for a #! line.
    script.write_text(f"#!/bin/sh\n'''exec' \"{engine_python}\" \"$0\" \"$@\"\n' '''\nimport sys\n")
    assert cc.engine_interpreter(["vllm"], path=env["PATH"]) == [str(engine_python)]


# -- restore and save ------------------------------------------------------------------------------


def test_a_missing_key_is_a_miss_and_leaves_empty_dirs(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    _fill(cache_dir)  # leftovers of an earlier run on this host do not count
    assert _cache(tmp_path / "store", cache_dir).restore() == "miss"
    assert _files(cache_dir) == {}
    assert sorted(p.name for p in cache_dir.iterdir()) == sorted(cc.CACHE_DIRS)


def test_save_then_restore_round_trips_byte_for_byte(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = _fill(tmp_path / "a")
    assert _cache(tmp_path / "store", tmp_path / "a").save()
    (pointer,) = (tmp_path / "store").glob("*.json")
    assert json.loads(pointer.read_text())["inputs"] == {"gpu": "NVIDIA L4"}
    with caplog.at_level(logging.INFO, "deploy.compile_cache"):
        assert _cache(tmp_path / "store", tmp_path / "b").restore() == "hit"
    assert _files(tmp_path / "b") == files
    hit = next(r for r in caplog.records if "compile cache hit" in r.getMessage())
    assert hit.restore_bytes > 0 and hit.restore_s >= 0  # type: ignore[attr-defined]
    # A second save of the same key keeps the first (create-only) and says so without failing.
    assert not _cache(tmp_path / "store", tmp_path / "b").save()


def test_a_restored_start_that_compiled_more_saves_the_second_generation_once(tmp_path: Path) -> None:
    """The cold start's Dynamo profile makes the next start compile the sampler again
    (docs/cold-start-h200): that start's additions are stored once, and starts restore them."""
    store = tmp_path / "store"
    first = _fill(tmp_path / "cold")
    cold = _cache(store, tmp_path / "cold")
    assert cold.worth_saving("miss") and cold.save()
    second = _cache(store, tmp_path / "second")
    assert second.restore() == "hit" and second.generation == 1
    assert not second.worth_saving("hit")  # nothing compiled: nothing to store
    (tmp_path / "second" / "inductor" / "fxgraph" / "dynamic").write_bytes(b"sampler")
    assert second.worth_saving("hit") and second.save()
    assert sorted(p.name for p in store.glob("*.json")) == ["k" * 20 + ".2.json", "k" * 20 + ".json"]
    third = _cache(store, tmp_path / "third")
    assert third.restore() == "hit" and third.generation == 2
    assert _files(tmp_path / "third") == first | {"inductor/fxgraph/dynamic": b"sampler"}
    (tmp_path / "third" / "triton" / "more").write_bytes(b"x")
    assert not third.worth_saving("hit")  # at most two generations
    # A concurrent second start that compiled more too: the first pointer stays (create-only).
    late = _cache(store, tmp_path / "late")
    late.generation, late.restored_files = 1, 4
    assert not late.save()


def test_a_corrupt_second_generation_falls_back_to_the_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged newest generation costs its start the sampler's compile, never the whole cache."""
    store = tmp_path / "store"
    first = _fill(tmp_path / "cold")
    assert _cache(store, tmp_path / "cold").save()
    (store / f"{'k' * 20}.2.json").write_text("{not json")
    restored = _cache(store, tmp_path / "next")
    with caplog.at_level(logging.INFO, "deploy.compile_cache"):
        assert restored.restore() == "hit" and restored.generation == 1
    assert _files(tmp_path / "next") == first
    assert any(".2.json ignored" in r.getMessage() for r in caplog.records)
    (store / f"{'k' * 20}.json").write_text("{not json either")
    assert _cache(store, tmp_path / "none").restore() == "corrupt"
    assert _files(tmp_path / "none") == {}


@pytest.mark.parametrize(
    "damage",
    [
        "not-zstd",
        "truncated",
        "sha-mismatch",
        "bad-pointer",
        "archive-gone",
        "dotdot",
        "absolute",
        "link-out",
    ],
)
def test_a_corrupt_or_unsafe_cache_is_ignored_and_leaves_clean_dirs(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, cache_dir, key = tmp_path / "store", tmp_path / "cache", "k" * 20
    good = _tar_zst([tarfile.TarInfo("vllm/ok.py")])
    outside = tmp_path / "outside"
    link = tarfile.TarInfo("triton/escape")
    link.type, link.linkname = tarfile.SYMTYPE, str(outside)
    archives = {
        "not-zstd": b"this is no archive",
        "truncated": good[: len(good) // 2],
        "dotdot": _tar_zst([tarfile.TarInfo("vllm/ok.py"), tarfile.TarInfo("vllm/../../outside")]),
        "absolute": _tar_zst([tarfile.TarInfo(str(outside))]),
        "link-out": _tar_zst([tarfile.TarInfo("vllm/ok.py"), link]),
    }
    _plant(store, key, archives.get(damage, good), sha256="0" * 64 if damage == "sha-mismatch" else None)
    if damage == "bad-pointer":
        (store / f"{key}.json").write_text('{"archive": "../../etc/passwd", "sha256": "x", "size": 1}')
    if damage == "archive-gone":
        for p in (store / "archives").iterdir():
            p.unlink()
    _fill(cache_dir)
    with caplog.at_level(logging.WARNING, "deploy.compile_cache"):
        assert _cache(store, cache_dir, key).restore() == "corrupt"
    assert _files(cache_dir) == {} and not outside.exists()
    assert not list(cache_dir.glob(".archive-*"))  # the downloaded archive is not left behind
    assert any("ignored" in r.getMessage() for r in caplog.records)


def test_an_unreachable_store_is_logged_and_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "store").write_text("a file where the store's directory should be")
    cache = _cache(tmp_path / "store" / "sub", tmp_path / "cache")
    assert cache.restore() in ("miss", "error")
    _fill(tmp_path / "cache")
    assert cache.save() is False


def test_nothing_compiled_is_not_saved(tmp_path: Path) -> None:
    assert not _cache(tmp_path / "store", tmp_path / "cache").save()
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").glob("*.json"))


def test_retry_without_cache_only_when_a_restored_engine_died() -> None:
    assert cc.should_retry_without_cache("hit", healthy=False, exited=True, stopping=False)
    assert not cc.should_retry_without_cache("hit", healthy=False, exited=False, stopping=False)  # timeout
    assert not cc.should_retry_without_cache("hit", healthy=False, exited=True, stopping=True)  # SIGTERM
    assert not cc.should_retry_without_cache("hit", healthy=True, exited=False, stopping=False)
    for outcome in ("miss", "corrupt", "error", None):
        assert not cc.should_retry_without_cache(outcome, healthy=False, exited=True, stopping=False)


# -- settings --------------------------------------------------------------------------------------


def test_the_store_defaults_to_the_weights_buckets_prefix() -> None:
    weights = SupervisorSettings(weights_url="gs://proj-dgemma-weights/models/v2")
    assert weights.resolved_compile_cache_url == "gs://proj-dgemma-weights/compile-cache"
    assert SupervisorSettings().resolved_compile_cache_url is None  # baked, no store named
    off = SupervisorSettings(weights_url="gs://b/p", compile_cache_url="off")
    assert off.resolved_compile_cache_url is None
    assert SupervisorSettings(compile_cache_url="/srv/cc").resolved_compile_cache_url == "/srv/cc"
    with pytest.raises(ValueError, match="compile_cache_url must be"):
        SupervisorSettings(compile_cache_url="gs://")


# -- the supervisor --------------------------------------------------------------------------------

GATEWAY = GatewaySettings(served_model="dgemma-26b-w4a16")
# A stand-in `vllm serve`: dies if its restored cache holds `poison`, else answers /health.
FAKE_VLLM = """\
import http.server, os, pathlib, sys
if (pathlib.Path(os.environ["VLLM_CACHE_ROOT"]) / "poison").exists():
    sys.exit("poisoned by the restored cache")
for name in ("VLLM_CACHE_ROOT", "TRITON_CACHE_DIR"):
    (pathlib.Path(os.environ[name]) / "compiled.bin").write_bytes(b"kernel")
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *a):
        pass
port = int(sys.argv[sys.argv.index("--port") + 1])
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def gpu_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An L4 (fake nvidia-smi), a fake `vllm` on PATH, and the 26B's config.json; the model dir."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_nvidia_smi(bin_dir)
    (bin_dir / "vllm").write_text(f"#!{sys.executable}\n{FAKE_VLLM}")
    (bin_dir / "vllm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    config = json.loads(BIG_CONFIG.read_text())
    config["quantization_config"] = {"quant_method": "compressed-tensors"}
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    return model


def _supervisor(model: Path, tmp_path: Path, **settings: Any) -> Supervisor:
    config = SupervisorSettings(
        engine_mode="gpu",
        model_dir=model,
        engine_port=free_port(),
        compile_cache_dir=tmp_path / "cc",
        engine_startup_timeout_s=30,
        **settings,
    )
    return Supervisor(GATEWAY, config, weights=False)


def test_the_gpu_engines_env_points_the_four_caches_at_the_cache_dir(gpu_host: Path, tmp_path: Path) -> None:
    sup = _supervisor(gpu_host, tmp_path, compile_cache_url=str(tmp_path / "store"))
    root = (tmp_path / "cc").resolve()
    assert {var: sup.engine.env[var] for var in cc.CACHE_ENV} == {
        "VLLM_CACHE_ROOT": str(root / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
        "TRITON_CACHE_DIR": str(root / "triton"),
        "CUDA_CACHE_PATH": str(root / "cuda"),
    }
    # Without a store the kit leaves them alone (gpu-check points them at caches of its own).
    off = _supervisor(gpu_host, tmp_path, compile_cache_url="off")
    assert off.compile_cache_url is None
    assert off.engine.env.get("VLLM_CACHE_ROOT") == os.environ.get("VLLM_CACHE_ROOT")


def _start_until(sup: Supervisor, saved: Callable[[], bool]) -> None:
    """Start the engine, then wait (at most 20 s) for the caches' save, which runs in the background."""
    try:
        assert sup._start_engine()
        deadline = time.monotonic() + 20
        while not saved() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        sup.shutdown()


def test_a_miss_is_saved_after_health_and_a_poisoned_cache_is_retried_once_without_it(
    gpu_host: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    sup = _supervisor(gpu_host, tmp_path, compile_cache_url=str(store))
    _start_until(sup, lambda: bool(list(store.glob("*.json"))))
    (pointer,) = store.glob("*.json")
    assert json.loads(pointer.read_text())["files"] == 2

    # Replace the stored cache by one that kills the engine at start (the store is create-only).
    _fill(tmp_path / "poisoned")
    (tmp_path / "poisoned" / "vllm" / "poison").write_text("")
    pointer.unlink()
    assert _cache(store, tmp_path / "poisoned", pointer.stem).save()
    sup = _supervisor(gpu_host, tmp_path, compile_cache_url=str(store))
    try:
        with caplog.at_level(logging.INFO):
            assert sup._start_engine()
    finally:
        sup.shutdown()
    messages = [r.getMessage() for r in caplog.records]
    assert any("compile cache hit" in m for m in messages)
    assert any("once more with empty caches" in m for m in messages)
    assert not (tmp_path / "cc" / "vllm" / "poison").exists()
    assert (tmp_path / "cc" / "vllm" / "compiled.bin").exists()  # the second engine compiled afresh


def test_a_restored_start_that_compiles_more_stores_it_for_the_next(
    gpu_host: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored generation without the engine's `compiled.bin`: the start that compiles it saves the
    second generation in the background, and the next start restores that one."""
    store = tmp_path / "store"
    sup = _supervisor(gpu_host, tmp_path, compile_cache_url=str(store))
    key = cc.for_engine(str(store), tmp_path / "cc", sup.engine.argv, sup.settings.model_dir, "NVIDIA L4")
    assert key is not None
    _fill(tmp_path / "gen1")
    assert _cache(store, tmp_path / "gen1", key.key).save()
    _start_until(sup, (store / f"{key.key}.2.json").exists)
    assert json.loads((store / f"{key.key}.2.json").read_text())["files"] == 4 + 2  # with the engine's two
    sup = _supervisor(gpu_host, tmp_path, compile_cache_url=str(store))
    try:
        with caplog.at_level(logging.INFO):
            assert sup._start_engine()
    finally:
        sup.shutdown()
    assert any("generation 2" in r.getMessage() for r in caplog.records)
    assert len(list(store.glob("*.json"))) == 2
