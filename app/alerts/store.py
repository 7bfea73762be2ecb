"""Where the router's ledger keeps its facts: small JSON objects, created once, read, listed by
prefix, and (claims only) replaced by compare-and-swap on their generation.

Two stores, one contract: `MemoryStore` (one process: `make dev`, and the default) and `GcsStore`
(Cloud Storage, shared by every instance and revision of the router: `DGEMMA_ALERTS_LEDGER_URL`).
Cloud Storage is strongly consistent for reads, overwrites and listings. Every GcsStore write is a
multipart upload with a generation precondition (`ifGenerationMatch=0`: create only, through
app/core/storage.py's `create_only`; or the generation read: compare-and-swap). google-cloud-storage
sends any upload under 8 MiB of known size so, and that is the one write the local emulator checks
preconditions on (fake-gcs-server 1.54.0 ignores them on media and resumable uploads, deletes,
patches and copies: docs/alert-routing.md). A delete is only ever cleanup, never a decision.

`FailoverStore` puts this process's memory behind the shared store: every call to it runs under a
`Deadline` its caller passes (a delivery's, through `within`; none: `timeout_s` alone), and a call that
fails or runs out of time marks the store away. Until it answers again, calls are served from memory,
and the facts created meanwhile are kept to write once it does: a page is sent from memory rather than
held. What it keeps in memory, and so writes later, the ledger tells it (`keep`): the store itself
knows no names.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc
from google.cloud.storage.retry import DEFAULT_RETRY

from app.alerts.metrics import RouterMetrics
from app.core.config import ConfigError
from app.core.errors import ServiceError
from app.core.storage import create_only, parse_gs, storage_client

log = logging.getLogger("app.alerts")
T = TypeVar("T")


@dataclass(frozen=True)
class Deadline:
    """The monotonic time by which a store call must have answered: a delivery's (its arrival, plus
    the decision budget, plus `alerts_ledger_timeout_s`: app/alerts/triage.py), or none (`at` None:
    scans, late classifications, cleanup, writing the backlog), where each call has its own timeout."""

    at: float | None = None

    def left(self, cap_s: float) -> float:
        """What a store call may take now: `cap_s`, and never past the deadline."""
        return cap_s if self.at is None else min(cap_s, self.at - time.monotonic())


NO_DEADLINE = Deadline()


class LedgerUnavailable(ServiceError):
    """The ledger's store did not answer in time (or refused the router's identity)."""

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


@runtime_checkable
class Bounded(Protocol):
    """A store whose calls can end by a caller's deadline themselves (GcsStore: its HTTP timeout and
    retries end by then, and its worker thread with them). Another store's call is only given up."""

    def within(self, deadline: Deadline) -> ObjectStore:
        """This store, each of its calls answered by `deadline` too."""
        ...


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

    def remember(self, name: str, body: dict[str, Any]) -> None:
        """Keep `name` as the shared store has it (read or listed there), whatever was here."""
        folder = self._folder(name, make=True)
        assert folder is not None
        folder[name] = Stored(json.loads(json.dumps(body)), self._next())


class GcsStore:
    """`gs://bucket/prefix` through google-cloud-storage (the emulator under STORAGE_EMULATOR_HOST).
    The client is blocking: each call runs in a worker thread of the store's own, under `timeout_s`
    and the deadline of `within` (if any): the HTTP timeout and the client's retries
    (google-cloud-storage's default retry, whose own deadline is 120 s) both end by then, and the
    call is given up at it."""

    def __init__(self, url: str, client: Any = None, *, timeout_s: float = 1.0) -> None:
        bucket, self.prefix = parse_gs(url)
        try:
            self._client = client or storage_client()
        except auth_exc.GoogleAuthError as e:
            raise ConfigError(f"ledger {url}: no credentials for Cloud Storage ({e})") from e
        self._bucket = self._client.bucket(bucket)
        self._timeout = timeout_s
        # Its own threads: a store that hangs holds these (each until its HTTP timeout), not the
        # default executor's few.
        self._pool = ThreadPoolExecutor(16, thread_name_prefix="ledger")
        self._deadline = NO_DEADLINE
        self.url = url

    def within(self, deadline: Deadline) -> GcsStore:
        """This store (its client, bucket and threads), each call answered by `deadline` too."""
        bounded = copy.copy(self)
        bounded._deadline = deadline
        return bounded

    def _path(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    async def _call(self, what: str, fn: Callable[[float, Any], T]) -> T:
        """`fn(timeout, retry)` in a worker thread, given up when the time left is."""
        left = self._deadline.left(self._timeout)
        if left <= 0:
            raise LedgerUnavailable(f"ledger {self.url}: {what}: the delivery's time is spent")
        retry = DEFAULT_RETRY.with_timeout(left).with_delay(initial=0.05, maximum=0.5)
        call = asyncio.get_running_loop().run_in_executor(self._pool, fn, left, retry)
        try:
            return await asyncio.wait_for(call, left)
        except (gexc.PreconditionFailed, gexc.NotFound):
            raise
        except TimeoutError as e:
            raise LedgerUnavailable(f"ledger {self.url}: {what} did not answer within {left:.2f} s") from e
        except (gexc.GoogleAPIError, auth_exc.GoogleAuthError, OSError) as e:  # RetryError included
            raise LedgerUnavailable(f"ledger {self.url}: {what} failed: {type(e).__name__}: {e}") from e

    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        # A create the client retried after a lost reply finds its own object (412): the nonce in
        # the body tells it apart from another writer's.
        nonce = uuid.uuid4().hex
        payload = json.dumps({**body, "_nonce": nonce})
        blob = self._bucket.blob(self._path(name))
        created = await self._call(
            f"create {name}",
            lambda t, r: create_only(blob, payload, content_type="application/json", timeout=t, retry=r),
        )
        if not created:
            found = await self.read(name)
            if found is not None and found.body.get("_nonce") == nonce:
                return found.generation
            return None
        return int(blob.generation)

    async def read(self, name: str) -> Stored | None:
        blob = self._bucket.blob(self._path(name))
        try:
            data = await self._call(f"read {name}", lambda t, r: blob.download_as_bytes(timeout=t, retry=r))
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
                lambda t, r: blob.upload_from_string(
                    json.dumps(body),
                    content_type="application/json",
                    if_generation_match=generation,
                    timeout=t,
                    retry=r,
                ),
            )
        except (gexc.PreconditionFailed, gexc.NotFound):
            return None
        return int(blob.generation)

    async def names(self, prefix: str) -> list[str]:
        full = self._path(prefix)
        cut = len(self._path(""))

        def listing(timeout: float, retry: Any) -> list[str]:
            blobs = self._client.list_blobs(self._bucket, prefix=full, timeout=timeout, retry=retry)
            return sorted(b.name[cut:] for b in blobs)

        return await self._call(f"list {prefix}", listing)

    async def delete(self, name: str) -> None:
        blob = self._bucket.blob(self._path(name))
        with contextlib.suppress(gexc.NotFound):
            await self._call(f"delete {name}", lambda t, r: blob.delete(timeout=t, retry=r))


Keep = Literal["listed", "read", "never"]
"""What `FailoverStore` keeps in memory of a name of the shared store, to answer from while the store
is away (and, for one created meanwhile, to write once it is back). "listed": its body as read or
written, and its existence as soon as a listing names it (a fact, whose existence is what counts);
"read": only a body read or written (an entry read for its body, which an empty stand-in from a
listing would spoil); "never" (a claim: one this process does not hold must not keep a send off while
the store is away, and claims expire)."""


def keep_listed(name: str) -> Keep:
    return "listed"


# Listed while away to see whether the store answers again; nothing is kept under it.
PROBE = "probe/"
_SEEN_MAX = 100_000  # generations of names never kept, as the shared store gave them


class FailoverStore:
    """The shared store, with this process's memory behind it; or memory alone (`shared` None).

    Up: each call goes to the shared store under its deadline (`within`; `timeout_s` at most), and
    what it answers is kept in memory as `keep` says. A call that fails or runs out of its time marks
    the store away. Away: calls are answered from memory at once, and each fact created (anything
    kept: not claims, which expire) joins `backlog`. Every `retry_s`, `recover` writes the backlog,
    oldest first; once all of it is there (or, with none, once a listing answers), calls go to the
    shared store again. So a fact this process created from memory is in the shared store before
    this process reads from it again.

    A replace (a claim's renewal or take-over) of a name memory lacks succeeds while the store is
    away only from a generation the shared store gave this process: its own claim stays its own.
    """

    def __init__(
        self,
        shared: ObjectStore | None,
        metrics: RouterMetrics | None = None,
        *,
        timeout_s: float = 1.0,
        retry_s: float = 2.0,
        keep: Callable[[str], Keep] = keep_listed,
    ) -> None:
        self.shared = shared
        self.memory = MemoryStore()
        self.backlog: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.timeout_s = timeout_s
        self.retry_s = retry_s
        self.keep = keep
        self.away_since: float | None = None
        self._seen: OrderedDict[str, int] = OrderedDict()
        self._metrics = metrics
        self._gauges()

    @property
    def up(self) -> bool:
        return self.away_since is None

    def within(self, deadline: Deadline) -> Scope:
        """The calls of one caller (an alert's routing), each answered by `deadline`."""
        return Scope(self, deadline)

    # The store's contract, for calls outside a delivery: each under `timeout_s` alone.

    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        return await self.within(NO_DEADLINE).create(name, body)

    async def read(self, name: str) -> Stored | None:
        return await self.within(NO_DEADLINE).read(name)

    async def replace(self, name: str, body: dict[str, Any], generation: int) -> int | None:
        return await self.within(NO_DEADLINE).replace(name, body, generation)

    async def names(self, prefix: str) -> list[str]:
        return await self.within(NO_DEADLINE).names(prefix)

    async def delete(self, name: str) -> None:
        await self.within(NO_DEADLINE).delete(name)

    async def either(
        self,
        operation: str,
        deadline: Deadline,
        ask: Callable[[ObjectStore], Awaitable[T]],
        local: Callable[[], Awaitable[T]],
    ) -> tuple[T, bool]:
        """Every call's one fallthrough: `ask` the shared store while it is up, by `deadline`; else,
        or when it fails now, `local` (this process's memory). Returns the answer, and whether
        memory gave it with a shared store behind (the call was served from memory)."""
        if self.shared is None:
            return await local(), False
        if self.up:
            with contextlib.suppress(LedgerUnavailable):
                return await self._ask(operation, deadline, ask), False
        return await local(), True

    async def _ask(
        self, operation: str, deadline: Deadline, call: Callable[[ObjectStore], Awaitable[T]]
    ) -> T:
        """`call` on the shared store by `deadline` (`timeout_s` at most); raises LedgerUnavailable
        (the store marked away) when it fails or does not answer in time."""
        shared = self.shared
        assert shared is not None
        left = deadline.left(self.timeout_s)
        try:
            if left <= 0:
                raise LedgerUnavailable(f"ledger: {operation}: the delivery's time is spent")
            if deadline.at is not None and isinstance(shared, Bounded):
                shared = shared.within(deadline)
            try:
                return await asyncio.wait_for(call(shared), left)
            except TimeoutError as e:
                raise LedgerUnavailable(f"ledger: {operation} did not answer within {left:.2f} s") from e
        except LedgerUnavailable as e:
            if self._metrics is not None:
                self._metrics.ledger_failures.labels(operation).inc()
            if self.up:
                log.error("%s; routing from this process's memory until the store answers", e)
                self.away_since = time.monotonic()
                self._gauges()
            raise

    def _gauges(self) -> None:
        if self._metrics is not None and self.shared is not None:
            self._metrics.ledger_up.set(1 if self.up else 0)
            self._metrics.ledger_backlog.set(len(self.backlog))

    def _saw(self, name: str, generation: int | None) -> None:
        """`name` (never kept) is at `generation` in the shared store, as this process wrote or read it."""
        if generation is not None:
            self._seen[name] = generation
            self._seen.move_to_end(name)
            while len(self._seen) > _SEEN_MAX:
                self._seen.popitem(last=False)

    async def recover(self) -> bool:
        """Write the backlog to the shared store, oldest first: True (up again) once all of it is
        there, or, with none, once a listing answers."""
        if self.shared is None or self.up:
            return True
        written = 0
        try:
            if not self.backlog:
                await self._ask("list", NO_DEADLINE, lambda s: s.names(PROBE))
            while self.backlog:
                name, body = next(iter(self.backlog.items()))
                # None (it exists: another process's fact, or this one's that landed late) is as good.
                await self._ask("create", NO_DEADLINE, lambda s: s.create(name, body))  # noqa: B023
                self.backlog.pop(name, None)
                written += 1
                self._gauges()
        except LedgerUnavailable:
            return False
        assert self.away_since is not None
        log.warning(
            "ledger: the store answers again after %.1f s; %d facts kept in memory written",
            time.monotonic() - self.away_since,
            written,
        )
        self.away_since = None
        self._gauges()
        return True

    async def recover_forever(self) -> None:
        while True:
            await asyncio.sleep(self.retry_s)
            await self.recover()


class Scope:
    """One caller's calls to a `FailoverStore` (an alert's routing: app/alerts/triage.py), each
    answered by `deadline`. `served` says afterwards whether any was answered from this process's
    memory because the shared store was away: what the calls returned, kept by their caller."""

    def __init__(self, store: FailoverStore, deadline: Deadline) -> None:
        self.store, self.deadline = store, deadline
        self.served = False

    async def _either(
        self, operation: str, ask: Callable[[ObjectStore], Awaitable[T]], local: Callable[[], Awaitable[T]]
    ) -> T:
        answer, from_memory = await self.store.either(operation, self.deadline, ask, local)
        self.served |= from_memory
        return answer

    async def create(self, name: str, body: dict[str, Any]) -> int | None:
        store, keep = self.store, self.store.keep(name)

        async def ask(shared: ObjectStore) -> int | None:
            generation = await shared.create(name, body)
            if keep == "never":
                store._saw(name, generation)
            elif generation is not None or await store.memory.read(name) is None:
                store.memory.remember(name, body if generation is not None else {})
            return generation

        async def local() -> int | None:
            generation = await store.memory.create(name, body)
            if generation is not None and keep != "never" and store.shared is not None:
                store.backlog[name] = body
                store._gauges()
            return generation

        return await self._either("create", ask, local)

    async def read(self, name: str) -> Stored | None:
        store, keep = self.store, self.store.keep(name)

        async def ask(shared: ObjectStore) -> Stored | None:
            found = await shared.read(name)
            if found is not None and keep == "never":
                store._saw(name, found.generation)
            elif found is not None:
                store.memory.remember(name, found.body)
            return found

        return await self._either("read", ask, lambda: store.memory.read(name))

    async def replace(self, name: str, body: dict[str, Any], generation: int) -> int | None:
        store, keep = self.store, self.store.keep(name)

        async def ask(shared: ObjectStore) -> int | None:
            moved = await shared.replace(name, body, generation)
            if keep == "never":
                store._saw(name, moved)
            return moved

        async def local() -> int | None:
            if store.shared is None or await store.memory.read(name) is not None:
                return await store.memory.replace(name, body, generation)
            if store._seen.get(name) == generation:
                # This process's claim in the shared store, renewed while the store is away: it
                # stays this process's.
                return await store.memory.create(name, body)
            return None

        return await self._either("replace", ask, local)

    async def names(self, prefix: str) -> list[str]:
        store = self.store

        async def ask(shared: ObjectStore) -> list[str]:
            listed = await shared.names(prefix)
            for name in listed:  # that it is there, if not its body
                if store.keep(name) == "listed" and await store.memory.read(name) is None:
                    store.memory.remember(name, {})
            return listed

        return await self._either("list", ask, lambda: store.memory.names(prefix))

    async def delete(self, name: str) -> None:
        store = self.store
        await store.memory.delete(name)
        store._seen.pop(name, None)
        if store.backlog.pop(name, None) is not None:
            store._gauges()
        # Away, nothing is kept to delete later: a delete is cleanup (a claim expires; a pending
        # entry whose episode is done is dropped by the scan that finds it). Nor does it count as
        # served from memory.
        await store.either("delete", self.deadline, lambda shared: shared.delete(name), _nothing)


async def _nothing() -> None:
    return None
