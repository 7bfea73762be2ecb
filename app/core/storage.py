"""Cloud Storage for the kit's processes: `gs://` URLs, and one way to make a client (the emulator
under STORAGE_EMULATOR_HOST, else Application Default Credentials: the service's identity)."""

from __future__ import annotations

import os

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
