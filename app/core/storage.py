"""Cloud Storage for the kit's processes: `gs://` URLs, one way to make a client (the emulator
under STORAGE_EMULATOR_HOST, else Application Default Credentials: the service's identity), and
the one create-only write (the router's ledger, the engine's compile cache)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import storage

from app.core.config import ConfigError


def parse_gs(url: str) -> tuple[str, str]:
    """`gs://bucket/some/prefix` -> ("bucket", "some/prefix")."""
    if not url.startswith("gs://") or len(url) <= 5 or url[5] == "/":
        raise ConfigError(f"expected a gs://bucket/prefix URL, got {url!r}")
    bucket, _, prefix = url[5:].partition("/")
    return bucket, prefix.strip("/")


def storage_client(project: str | None = None) -> storage.Client:
    """A storage client: anonymous against the emulator when STORAGE_EMULATOR_HOST is set, else
    ADC (raises google.auth's DefaultCredentialsError when there are none)."""
    if os.environ.get("STORAGE_EMULATOR_HOST"):
        from google.auth.credentials import AnonymousCredentials

        anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]
        return storage.Client(project=project or "local", credentials=anonymous)
    return storage.Client(project=project)


def create_only(blob: storage.Blob, data: bytes | str | Path, **upload: Any) -> bool:
    """Write `blob` unless it exists (`if_generation_match=0`): whether this call created it. An
    object that exists is a 412, or a 403 where the identity may create objects but not overwrite
    them (roles/storage.objectCreator): Cloud Storage can refuse the overwrite before it checks the
    precondition. A 403 for an object that does not exist is a real refusal, raised. `upload`: the
    upload's own arguments (`content_type`, `timeout`, `retry`); the existence check shares the
    last two. Bytes or text under 8 MiB go up in one multipart request, the one upload whose
    precondition fake-gcs-server checks too; a `Path`, as its size decides."""
    try:
        if isinstance(data, Path):
            blob.upload_from_filename(str(data), if_generation_match=0, **upload)
        else:
            blob.upload_from_string(data, if_generation_match=0, **upload)
    except gexc.PreconditionFailed:
        return False
    except gexc.Forbidden:
        check = {k: v for k, v in upload.items() if k in ("timeout", "retry")}
        if blob.exists(**check):
            return False
        raise
    return True
