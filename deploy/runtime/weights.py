"""Weights to and from GCS with a manifest (file list, sizes, sha256, and GCS's own MD5 and CRC32C)
beside the checkpoint.

upload: every file in parallel, then `manifest.json` last, so a half-finished upload has no manifest
and no download will start from it. download: google-cloud-storage's transfer manager (files in
parallel, large files in concurrent slices); files that already verify are skipped, so an
interrupted download resumes; every file is checked against the manifest before it is moved into
place, and a mismatch or a missing object stops with a message naming the object.
verify: against the manifest; a checkpoint that was fully verified and then made read-only (the
image's baked weights) carries a stamp, so its start-time check compares sizes instead of hashing
15 GB again. verify_remote: the bucket's objects against the manifest by the MD5 and CRC32C that
Cloud Storage keeps, without downloading them (a FUSE-mounted checkpoint).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import google_crc32c
import requests
from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc
from google.cloud import storage
from google.cloud.storage import transfer_manager

from app.core.config import ConfigError
from app.core.storage import parse_gs as storage_url
from app.core.storage import storage_client
from deploy.errors import WeightsError

MANIFEST = "manifest.json"
STAMP = ".verified"  # beside the manifest: {"manifest_sha256": ...} after a full verification
SLICE_BYTES = 32 * 2**20  # files above this are downloaded in concurrent slices
Progress = Callable[[int], None]  # called with bytes done


def _refusal(where: str, e: BaseException) -> WeightsError | None:
    """A Google Cloud, auth or local I/O failure as a WeightsError naming `where` and what to do."""
    if isinstance(e, gexc.Forbidden):
        return WeightsError(
            f"permission denied on {where}: {e.message}. The identity needs roles/storage.objectViewer "
            "on the bucket (roles/storage.objectAdmin to upload)."
        )
    if isinstance(e, gexc.NotFound):
        return WeightsError(f"not found: {where} ({e.message})")
    if isinstance(e, gexc.GoogleAPIError):
        return WeightsError(f"Cloud Storage refused {where}: {e}")
    if isinstance(e, auth_exc.DefaultCredentialsError):
        return WeightsError(
            f"no Google credentials for {where}: on Cloud Run the service account provides them; elsewhere "
            "run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
        )
    if isinstance(e, auth_exc.GoogleAuthError):
        return WeightsError(f"Google authentication failed for {where}: {e}")
    if isinstance(e, requests.RequestException):
        return WeightsError(f"Cloud Storage is not reachable for {where}: {e}")
    if isinstance(e, OSError):  # the local side: disk full, permissions
        return WeightsError(f"{where}: {e}")
    return None


@contextmanager
def _named_refusals(where: str) -> Iterator[None]:
    """Failures `_refusal` knows become named WeightsErrors instead of tracebacks."""
    try:
        yield
    except WeightsError:
        raise
    except Exception as e:
        refusal = _refusal(where, e)
        if refusal is None:
            raise
        raise refusal from e


@dataclass(frozen=True)
class Entry:
    name: str
    size: int
    sha256: str
    md5: str = ""  # base64, as Cloud Storage reports md5Hash ("" in manifests before they were kept)
    crc32c: str = ""  # base64, big-endian, as Cloud Storage reports it


@dataclass(frozen=True)
class Manifest:
    files: tuple[Entry, ...]
    created: str

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.files)

    @property
    def digest(self) -> str:
        """The checkpoint's content digest (names, sizes, sha256s; not when it was listed): the folder
        a deploy uploads it to, so that one folder only ever holds one checkpoint."""
        files = sorted((e.name, e.size, e.sha256) for e in self.files)
        return hashlib.sha256(json.dumps(files).encode()).hexdigest()[:12]

    def to_json(self) -> str:
        return (
            json.dumps({"created": self.created, "files": [asdict(e) for e in self.files]}, indent=2) + "\n"
        )

    @classmethod
    def from_json(cls, text: str, where: str) -> Manifest:
        try:
            data = json.loads(text)
            return cls(tuple(Entry(**e) for e in data["files"]), str(data.get("created", "")))
        except (ValueError, KeyError, TypeError) as e:
            raise WeightsError(f"{where} is not a valid manifest: {e}") from e


def parse_gs(url: str) -> tuple[str, str]:
    """`gs://bucket/some/prefix` -> ("bucket", "some/prefix")."""
    try:
        return storage_url(url)
    except ConfigError as e:
        raise WeightsError(str(e)) from e


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(8 * 2**20):
            h.update(chunk)
    return h.hexdigest()


def entry_for(path: Path, name: str) -> Entry:
    """A manifest entry: sha256 (ours) plus the MD5 and CRC32C Cloud Storage computes, in one read."""
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    crc = google_crc32c.Checksum()  # type: ignore[no-untyped-call]
    with path.open("rb") as f:
        while chunk := f.read(8 * 2**20):
            sha.update(chunk)
            md5.update(chunk)
            crc.update(chunk)  # type: ignore[no-untyped-call]
    crc_digest: bytes = crc.digest()  # type: ignore[no-untyped-call]
    md5_b64, crc_b64 = (base64.b64encode(d).decode() for d in (md5.digest(), crc_digest))
    return Entry(name, path.stat().st_size, sha.hexdigest(), md5_b64, crc_b64)


def checkpoint_files(src: Path) -> list[Path]:
    """The files of a local checkpoint that its manifest lists (all but the manifest and stamp)."""
    return sorted(p for p in src.rglob("*") if p.is_file() and p.name not in (MANIFEST, STAMP))


def build_manifest(src: Path, workers: int = 8) -> Manifest:
    """Every file's entry, hashed `workers` files at a time (hashlib releases the GIL)."""
    files = checkpoint_files(src)
    if not files:
        raise WeightsError(f"{src} has no files to upload")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        entries = tuple(pool.map(lambda p: entry_for(p, p.relative_to(src).as_posix()), files))
    return Manifest(entries, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))


def seal(directory: Path) -> Manifest:
    """Give a local checkpoint its manifest and stamp and make it read-only: the state the image's
    baked weights are in, which `dgemma run` checks by sizes (a generated checkpoint, say)."""
    manifest = build_manifest(directory)
    (directory / MANIFEST).write_text(manifest.to_json())
    write_stamp(directory)
    for path in [*directory.rglob("*"), directory]:  # as the image's COPY --chmod=0555 leaves it
        path.chmod(0o555 if path.is_dir() else 0o444)
    return manifest


def same_files(a: Manifest, b: Manifest) -> bool:
    """Whether two manifests describe the same checkpoint (names, sizes, contents)."""
    return sorted((e.name, e.size, e.sha256) for e in a.files) == sorted(
        (e.name, e.size, e.sha256) for e in b.files
    )


def _blob_name(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def upload(
    src: Path, url: str, client: storage.Client, *, workers: int = 8, manifest: Manifest | None = None
) -> Manifest:
    """Upload a checkpoint directory and write its manifest last (built here, hashing every file,
    unless the caller just built it)."""
    with _named_refusals(url):
        return _upload(src, url, client, workers, manifest or build_manifest(src))


def _upload(src: Path, url: str, client: storage.Client, workers: int, manifest: Manifest) -> Manifest:
    bucket_name, prefix = parse_gs(url)
    bucket = client.bucket(bucket_name)
    results = transfer_manager.upload_many_from_filenames(
        bucket,
        [e.name for e in manifest.files],
        source_directory=str(src),
        blob_name_prefix=f"{prefix}/" if prefix else "",
        max_workers=workers,
        worker_type=transfer_manager.THREAD,
    )
    for entry, result in zip(manifest.files, results, strict=True):
        if isinstance(result, Exception):
            raise WeightsError(f"upload of {entry.name} to {url} failed: {result}") from result
    bucket.blob(_blob_name(prefix, MANIFEST)).upload_from_string(
        manifest.to_json(), content_type="application/json"
    )
    return manifest


def fetch_manifest(url: str, client: storage.Client) -> Manifest:
    bucket_name, prefix = parse_gs(url)
    where = f"gs://{bucket_name}/{_blob_name(prefix, MANIFEST)}"
    with _named_refusals(where):
        try:
            text = client.bucket(bucket_name).blob(_blob_name(prefix, MANIFEST)).download_as_text()
        except gexc.NotFound as e:
            raise WeightsError(
                f"no manifest at {where}: upload the checkpoint with `dgemma weights upload`"
            ) from e
    return Manifest.from_json(text, where)


def _problem(path: Path, entry: Entry) -> str | None:
    """How a local file differs from its manifest entry, or None when it verifies."""
    if not path.is_file():
        return f"{entry.name}: missing"
    if path.stat().st_size != entry.size:
        return f"{entry.name}: {path.stat().st_size} bytes, manifest says {entry.size}"
    if sha256_file(path) != entry.sha256:
        return f"{entry.name}: sha256 differs from the manifest"
    return None


@dataclass(frozen=True)
class DownloadReport:
    downloaded: tuple[str, ...]
    skipped: tuple[str, ...]
    bytes_downloaded: int


def download(
    url: str,
    dst: Path,
    client: storage.Client,
    *,
    workers: int = 8,
    slice_bytes: int = SLICE_BYTES,
    progress: Progress | None = None,
    manifest: Manifest | None = None,
) -> DownloadReport:
    """Download a checkpoint into `dst`, skipping files that already match the manifest
    (fetched here unless the caller already has it)."""
    with _named_refusals(url):
        return _download(url, dst, client, workers, slice_bytes, progress, manifest)


def _download(
    url: str,
    dst: Path,
    client: storage.Client,
    workers: int,
    slice_bytes: int,
    progress: Progress | None,
    manifest: Manifest | None,
) -> DownloadReport:
    bucket_name, prefix = parse_gs(url)
    bucket = client.bucket(bucket_name)
    manifest = manifest or fetch_manifest(url, client)
    dst.mkdir(parents=True, exist_ok=True)
    todo, skipped = [], []
    for entry in manifest.files:
        if _problem(dst / entry.name, entry) is None:
            skipped.append(entry.name)
            if progress:
                progress(entry.size)
        else:
            todo.append(entry)

    small = [e for e in todo if e.size <= slice_bytes]
    large = [e for e in todo if e.size > slice_bytes]
    for e in todo:
        (dst / e.name).parent.mkdir(parents=True, exist_ok=True)
    # Into `<name>.partial` first: a file only takes its real name once it verifies.
    blobs = [(bucket.blob(_blob_name(prefix, e.name)), e) for e in small]
    results = transfer_manager.download_many(
        [(blob, str(_partial(dst, e))) for blob, e in blobs],
        max_workers=workers,
        worker_type=transfer_manager.THREAD,
    )
    for (blob, entry), result in zip(blobs, results, strict=True):
        if isinstance(result, Exception):
            _fail(bucket_name, blob.name, result)
        _accept(dst, entry, bucket_name, blob.name)
        if progress:
            progress(entry.size)
    for entry in large:
        name = _blob_name(prefix, entry.name)
        blob = bucket.get_blob(name)
        if blob is None:
            raise WeightsError(f"gs://{bucket_name}/{name} is in the manifest but missing from the bucket")
        try:
            transfer_manager.download_chunks_concurrently(
                blob,
                str(_partial(dst, entry)),
                chunk_size=slice_bytes,
                max_workers=workers,
                worker_type=transfer_manager.THREAD,
                crc32c_checksum=False,  # the manifest's sha256 is the check that counts
            )
        except Exception as e:
            _fail(bucket_name, name, e)
        _accept(dst, entry, bucket_name, name)
        if progress:
            progress(entry.size)
    (dst / MANIFEST).write_text(manifest.to_json())
    write_stamp(dst)  # every file was just checked (downloaded ones, and the skipped ones above)
    return DownloadReport(tuple(e.name for e in todo), tuple(skipped), sum(e.size for e in todo))


def _partial(dst: Path, entry: Entry) -> Path:
    return dst / f"{entry.name}.partial"


def _fail(bucket: str, name: str, error: Exception) -> None:
    where = f"gs://{bucket}/{name}"
    if isinstance(error, gexc.NotFound):
        raise WeightsError(f"{where} is in the manifest but missing from the bucket") from error
    raise (_refusal(where, error) or WeightsError(f"download of {where} failed: {error}")) from error


def _accept(dst: Path, entry: Entry, bucket: str, name: str) -> None:
    partial = _partial(dst, entry)
    got, size = sha256_file(partial), partial.stat().st_size
    if got != entry.sha256 or size != entry.size:
        partial.unlink()
        raise WeightsError(
            f"gs://{bucket}/{name} does not match the manifest: sha256 {got[:16]}... ({size} bytes), "
            f"expected {entry.sha256[:16]}... ({entry.size} bytes). Re-upload the checkpoint."
        )
    os.replace(partial, dst / entry.name)


def verify(directory: Path, *, full: bool = False) -> list[str]:
    """Problems of a local checkpoint against its manifest.json (empty when it verifies). Unless
    `full`, a read-only checkpoint whose stamp names this manifest is checked by sizes only."""
    path = directory / MANIFEST
    if not path.is_file():
        return [f"{path} is missing"]
    raw = path.read_bytes()
    manifest = Manifest.from_json(raw.decode(), str(path))
    if not manifest.files:
        return [f"{path} lists no files"]
    files = [directory / e.name for e in manifest.files]
    sized = all(
        f.is_file() and f.stat().st_size == e.size for f, e in zip(files, manifest.files, strict=True)
    )
    if not full and sized and _stamped(directory, hashlib.sha256(raw).hexdigest(), [path, *files]):
        return []
    return [p for e in manifest.files if (p := _problem(directory / e.name, e)) is not None]


def write_stamp(directory: Path) -> None:
    """Record that every file of `directory` was just verified against its manifest."""
    digest = hashlib.sha256((directory / MANIFEST).read_bytes()).hexdigest()
    stamp = {"manifest_sha256": digest, "verified": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    (directory / STAMP).write_text(json.dumps(stamp) + "\n")


def _stamped(directory: Path, manifest_sha256: str, files: list[Path]) -> bool:
    """A stamp for this very manifest, on a checkpoint nobody may write to (no write bit on the
    directory, the stamp or any of `files`): the image's baked weights, verified at build."""
    stamp = directory / STAMP
    if not stamp.is_file():
        return False
    writable = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    if any(p.stat().st_mode & writable for p in (directory, stamp, *files)):
        return False
    try:
        recorded = json.loads(stamp.read_text())["manifest_sha256"]
    except (ValueError, KeyError, TypeError):
        return False
    return bool(recorded == manifest_sha256)


def verify_remote(
    url: str, client: storage.Client, *, mounted: Path | None = None, manifest: Manifest | None = None
) -> list[str]:
    """Problems of the objects under `url` against its manifest (fetched here unless the caller has
    it), by the MD5 and CRC32C Cloud Storage keeps (nothing is downloaded); with `mounted`, also the
    files a FUSE mount of it shows (sizes)."""
    manifest = manifest or fetch_manifest(url, client)
    bucket_name, prefix = parse_gs(url)
    with _named_refusals(url):
        blobs = {b.name: b for b in client.list_blobs(bucket_name, prefix=f"{prefix}/" if prefix else None)}
    problems = []
    for e in manifest.files:
        name = _blob_name(prefix, e.name)
        blob = blobs.get(name)
        if not e.md5 or not e.crc32c:
            problems.append(f"{e.name}: the manifest has no MD5/CRC32C (uploaded by an older kit): re-upload")
        elif blob is None:
            problems.append(f"gs://{bucket_name}/{name}: missing")
        elif (blob.size, blob.md5_hash, blob.crc32c) != (e.size, e.md5, e.crc32c):
            problems.append(f"gs://{bucket_name}/{name}: size or checksums differ from the manifest")
        if mounted is not None:
            local = mounted / e.name
            if not local.is_file() or local.stat().st_size != e.size:
                problems.append(f"{local}: not visible in the mount with {e.size} bytes")
    return problems


def client_from_env(project: str | None = None) -> storage.Client:
    """A storage client (app.core.storage's), its refusals named."""
    with _named_refusals("Cloud Storage"):
        return storage_client(project)
