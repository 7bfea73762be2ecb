"""Where the router's ledger keeps its facts: small JSON objects, created once, read, listed by
prefix, and (claims only) replaced by compare-and-swap on their generation.

Two stores, one contract: `MemoryStore` (one process: `make dev`, and the default) and `GcsStore`
(Cloud Storage, shared by every instance and revision of the router: `DGEMMA_ALERTS_LEDGER_URL`).
Cloud Storage is strongly consistent for reads, overwrites and listings. Every GcsStore write is a
multipart upload with a generation precondition (`ifGenerationMatch=0`: create only, or the
generation read: compare-and-swap). google-cloud-storage sends any upload under 8 MiB of known size
so, and that is the one write the local emulator checks preconditions on (fake-gcs-server 1.54.0
ignores them on media and resumable uploads, deletes, patches and copies: docs/alert-routing.md).
A delete is only ever cleanup, never a decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc

from app.core.config import ConfigError
from app.core.errors import ServiceError
from app.core.storage import parse_gs, storage_client


class LedgerUnavailable(ServiceError):
    """The ledger's store did not answer (or refused the router's identity)."""

    status = 503


@dataclass(frozen=True)
class Stored:
    body: dict[str, Any]
    generation: int


class ObjectStore(Protocol):
    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        """Write `name` if it does not exist: its generation, or None when it already did."""

    async def read(self, name: str) -> Stored | None: ...

    async def replace(self, name: str, body: dict[str, Any], generation: int) -> int | None:
        """Overwrite `name` if it is still at `generation`: the new one, or None when it moved."""

    async def names(self, prefix: str) -> list[str]:
        """Every name under `prefix`, in order."""

    async def delete(self, name: str) -> None:
        """Remove `name` if it exists (cleanup only: never conditional)."""


class MemoryStore:
    """The store of one process, bounded: past `size` top-level folders (alerts), the oldest are
    forgotten first."""

    def __init__(self, size: int = 100_000) -> None:
        self._size = size
        self._folders: OrderedDict[str, dict[str, Stored]] = OrderedDict()
        self._generation = 0

    def _folder(self, name: str, *, make: bool = False) -> dict[str, Stored] | None:
        top = name.split("/", 2)[:2]
        folder_key = "/".join(top)
        folder = self._folders.get(folder_key)
        if folder is None and make:
            folder = self._folders[folder_key] = {}
            while len(self._folders) > self._size:
                self._folders.popitem(last=False)
        if folder is not None:
            self._folders.move_to_end(folder_key)
        return folder

    def _next(self) -> int:
        self._generation += 1
        return self._generation

    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        folder = self._folder(name, make=True)
        assert folder is not None
        if name in folder:
            return None
        folder[name] = Stored(json.loads(json.dumps(body)), self._next())
        return folder[name].generation

    async def read(self, name: str) -> Stored | None:
        folder = self._folder(name)
        return None if folder is None else folder.get(name)

    async def replace(self, name: str, body: dict[str, Any], generation: int) -> int | None:
        folder = self._folder(name)
        if folder is None or name not in folder or folder[name].generation != generation:
            return None
        folder[name] = Stored(json.loads(json.dumps(body)), self._next())
        return folder[name].generation

    async def names(self, prefix: str) -> list[str]:
        if prefix.count("/") >= 2:  # inside one folder
            folder = self._folder(prefix) or {}
            return sorted(n for n in folder if n.startswith(prefix))
        return sorted(n for folder in self._folders.values() for n in folder if n.startswith(prefix))

    async def delete(self, name: str) -> None:
        folder = self._folder(name)
        if folder is not None:
            folder.pop(name, None)


class GcsStore:
    """`gs://bucket/prefix` through google-cloud-storage (the emulator under STORAGE_EMULATOR_HOST).
    The client is blocking: each call runs in a worker thread."""

    def __init__(self, url: str, client: Any = None, *, timeout_s: float = 10.0) -> None:
        bucket, self.prefix = parse_gs(url)
        try:
            self._client = client or storage_client()
        except auth_exc.GoogleAuthError as e:
            raise ConfigError(f"ledger {url}: no credentials for Cloud Storage ({e})") from e
        self._bucket = self._client.bucket(bucket)
        self._timeout = timeout_s
        self.url = url

    def _path(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    async def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except (gexc.PreconditionFailed, gexc.NotFound):
            raise
        except (gexc.GoogleAPIError, auth_exc.GoogleAuthError, OSError) as e:
            raise LedgerUnavailable(f"ledger {self.url}: {what} failed: {type(e).__name__}: {e}") from e

    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        # A create the client retried after a lost reply finds its own object (412): the nonce in
        # the body tells it apart from another writer's.
        nonce = uuid.uuid4().hex
        payload = json.dumps({**body, "_nonce": nonce})
        blob = self._bucket.blob(self._path(name))
        try:
            await self._call(
                f"create {name}",
                lambda: blob.upload_from_string(
                    payload, content_type="application/json", if_generation_match=0, timeout=self._timeout
                ),
            )
        except gexc.PreconditionFailed:
            found = await self.read(name)
            if found is not None and found.body.get("_nonce") == nonce:
                return found.generation
            return None
        return int(blob.generation)

    async def read(self, name: str) -> Stored | None:
        blob = self._bucket.blob(self._path(name))
        try:
            data = await self._call(f"read {name}", lambda: blob.download_as_bytes(timeout=self._timeout))
        except gexc.NotFound:
            return None
        try:
            body = json.loads(data)
        except ValueError:
            body = {}  # not ours, or cut: a fact that exists with nothing to read
        return Stored(body, int(blob.generation))

    async def replace(self, name: str, body: dict[str, Any], generation: int) -> int | None:
        blob = self._bucket.blob(self._path(name))
        try:
            await self._call(
                f"replace {name}",
                lambda: blob.upload_from_string(
                    json.dumps(body),
                    content_type="application/json",
                    if_generation_match=generation,
                    timeout=self._timeout,
                ),
            )
        except (gexc.PreconditionFailed, gexc.NotFound):
            return None
        return int(blob.generation)

    async def names(self, prefix: str) -> list[str]:
        full = self._path(prefix)
        cut = len(self._path(""))

        def listing() -> list[str]:
            blobs = self._client.list_blobs(self._bucket, prefix=full, timeout=self._timeout)
            return sorted(b.name[cut:] for b in blobs)

        result: list[str] = await self._call(f"list {prefix}", listing)
        return result

    async def delete(self, name: str) -> None:
        blob = self._bucket.blob(self._path(name))
        with contextlib.suppress(gexc.NotFound):
            await self._call(f"delete {name}", lambda: blob.delete(timeout=self._timeout))
