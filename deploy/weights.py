"""Weights to and from GCS with a manifest (file list, sizes, sha256) beside the checkpoint.

upload: every file in parallel, then `manifest.json` last, so a half-finished upload has no manifest
and no download will start from it. download: google-cloud-storage's transfer manager (files in
parallel, large files in concurrent slices); files that already verify are skipped, so an
interrupted download resumes; every file is checked against the manifest before it is moved into
place, and a mismatch or a missing object stops with a message naming the object.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import requests
from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc
from google.cloud import storage
from google.cloud.storage import transfer_manager

MANIFEST = "manifest.json"
SLICE_BYTES = 32 * 2**20  # files above this are downloaded in concurrent slices
Progress = Callable[[int], None]  # called with bytes done


class WeightsError(RuntimeError):
    """The checkpoint is not usable; the message names the object or file."""


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


@dataclass(frozen=True)
class Manifest:
    files: tuple[Entry, ...]
    created: str

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.files)

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
    if not url.startswith("gs://") or len(url) <= 5:
        raise WeightsError(f"expected a gs://bucket/prefix URL, got {url!r}")
    bucket, _, prefix = url[5:].partition("/")
    return bucket, prefix.strip("/")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(8 * 2**20):
            h.update(chunk)
    return h.hexdigest()


def build_manifest(src: Path) -> Manifest:
    files = sorted(p for p in src.rglob("*") if p.is_file() and p.name != MANIFEST)
    if not files:
        raise WeightsError(f"{src} has no files to upload")
    entries = tuple(Entry(p.relative_to(src).as_posix(), p.stat().st_size, sha256_file(p)) for p in files)
    return Manifest(entries, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))


def _blob_name(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def upload(src: Path, url: str, client: storage.Client, *, workers: int = 8) -> Manifest:
    """Upload a checkpoint directory and write its manifest last."""
    with _named_refusals(url):
        return _upload(src, url, client, workers)


def _upload(src: Path, url: str, client: storage.Client, workers: int) -> Manifest:
    bucket_name, prefix = parse_gs(url)
    bucket = client.bucket(bucket_name)
    manifest = build_manifest(src)
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


def verify(directory: Path) -> list[str]:
    """Problems of a local checkpoint against its manifest.json (empty when it verifies)."""
    path = directory / MANIFEST
    if not path.is_file():
        return [f"{path} is missing"]
    manifest = Manifest.from_json(path.read_text(), str(path))
    return [p for e in manifest.files if (p := _problem(directory / e.name, e)) is not None]


def client_from_env(project: str | None = None) -> storage.Client:
    """A storage client: the emulator when STORAGE_EMULATOR_HOST is set, else ADC (the service account)."""
    if os.environ.get("STORAGE_EMULATOR_HOST"):
        from google.auth.credentials import AnonymousCredentials

        anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]
        return storage.Client(project=project or "local", credentials=anonymous)
    with _named_refusals("Cloud Storage"):
        return storage.Client(project=project)
