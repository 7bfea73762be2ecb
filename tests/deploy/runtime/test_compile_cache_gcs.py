"""The compile cache's Cloud Storage store against the real fake-gcs-server emulator: round trips
(multipart and resumable archives), a miss, and concurrent first instances (create-only pointer)."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from google.cloud import storage

from deploy.runtime import compile_cache as cc

pytestmark = pytest.mark.integration

URL = "gs://weights/compile-cache"


def _fill(cache_dir: Path, big: int = 0) -> dict[str, bytes]:
    files = {
        "vllm/torch_compile_cache/h/rank_0_0/backbone/graph.py": os.urandom(3000),
        "triton/K/kernel.cubin": os.urandom(big or 20000),  # random: zstd cannot shrink it
    }
    for name, data in files.items():
        (cache_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (cache_dir / name).write_bytes(data)
    return files


def _files(cache_dir: Path) -> dict[str, bytes]:
    return {
        p.relative_to(cache_dir).as_posix(): p.read_bytes()
        for p in cache_dir.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def _cache(gcs: storage.Client, cache_dir: Path, key: str, store: cc.Store | None = None) -> cc.CompileCache:
    return cc.CompileCache(store or cc.GcsStore(URL, gcs), cache_dir, key, {"gpu": "NVIDIA L4"})


def test_a_missing_key_is_a_miss(gcs: storage.Client, tmp_path: Path) -> None:
    assert _cache(gcs, tmp_path / "c", "a" * 20).restore() == "miss"


@pytest.mark.parametrize("big", [0, 9 * 2**20], ids=["multipart", "resumable-and-sliced"])
def test_save_then_restore_round_trips(
    gcs: storage.Client, tmp_path: Path, big: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cc, "SLICE_BYTES", 2**20)  # the big archive is downloaded in slices
    key = f"rt{big:018d}"
    files = _fill(tmp_path / "a", big)
    assert _cache(gcs, tmp_path / "a", key).save()
    assert _cache(gcs, tmp_path / "b", key).restore() == "hit"
    assert _files(tmp_path / "b") == files
    pointer = json.loads(gcs.bucket("weights").blob(f"compile-cache/{key}.json").download_as_bytes())
    archive = gcs.bucket("weights").get_blob(f"compile-cache/{pointer['archive']}")
    assert archive is not None and archive.size == pointer["size"] and (archive.size > 8 * 2**20) == bool(big)


class _Together:
    """A store whose pointer writes wait for each other: both instances race on the same name."""

    def __init__(self, inner: cc.Store, barrier: threading.Barrier) -> None:
        self.inner, self.barrier, self.where = inner, barrier, inner.where

    def get(self, name: str) -> bytes | None:
        return self.inner.get(name)

    def fetch(self, name: str, dest: Path) -> None:
        self.inner.fetch(name, dest)

    def create(self, name: str, src: Path | bytes) -> bool:
        if name.endswith(".json"):
            self.barrier.wait(timeout=30)
        return self.inner.create(name, src)


def test_concurrent_first_instances_leave_one_pointer_and_neither_fails(
    gcs: storage.Client, tmp_path: Path
) -> None:
    key = "race" + "0" * 16
    contents = [_fill(tmp_path / f"i{i}") for i in range(2)]  # each instance compiled its own bytes
    barrier = threading.Barrier(2)
    caches = [
        _cache(gcs, tmp_path / f"i{i}", key, _Together(cc.GcsStore(URL, gcs), barrier)) for i in range(2)
    ]
    with ThreadPoolExecutor(2) as pool:
        won = list(pool.map(lambda c: c.save(), caches))
    assert sorted(won) == [False, True]  # one created the pointer, the other's 412 is not a failure
    blobs = [b.name for b in gcs.list_blobs("weights", prefix="compile-cache/race")]
    assert blobs == [f"compile-cache/{key}.json"]
    # The pointer is the winner's, whole: a restore gives exactly the winner's files.
    assert _cache(gcs, tmp_path / "next", key).restore() == "hit"
    assert _files(tmp_path / "next") == contents[won.index(True)]


def test_the_pointer_is_create_only(gcs: storage.Client) -> None:
    store = cc.GcsStore(URL, gcs)
    assert store.create("only-once.json", b'{"n": 1}')
    assert not store.create("only-once.json", b'{"n": 2}')
    assert store.get("only-once.json") == b'{"n": 1}'
