"""API keys: from the settings and a file (re-read every `DGEMMA_API_KEYS_RELOAD_S`, so a rotated
Secret Manager version reaches running instances), kept only as SHA-256 digests, compared in
constant time; and the engine prefix-cache salt of each caller."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

from app.core.config import ConfigError
from app.core.errors import Unauthorized
from app.core.secrets import digest, is_kept, read_keys
from app.gateway.settings import GatewaySettings

log = logging.getLogger("app.auth")


class KeyRing:
    """The accepted keys; empty only when any bearer token is explicitly allowed. `file`'s keys are
    replaced by `reload`; `keys` (DGEMMA_API_KEYS) stay."""

    def __init__(self, keys: list[str], *, allow_any: bool, file: Path | None = None) -> None:
        self._fixed = [k for k in keys if k]
        self._file = file
        # Salts are keyed by a secret of this process: unguessable, and never derivable from a key
        # (vLLM asks for random, protected salts). The engine's cache lives as long as this process.
        self._salt_secret = os.urandom(32)
        self._use(self._fixed + (read_keys(file) if file is not None else []))
        if self.open and not allow_any:
            raise ConfigError(
                "no API keys: set DGEMMA_API_KEYS or DGEMMA_API_KEYS_FILE, or DGEMMA_ALLOW_ANY_KEY=true "
                "to accept any bearer token (local use only)"
            )

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> KeyRing:
        keys = [k.get_secret_value().strip() for k in settings.api_keys]
        ring = cls(keys, allow_any=settings.allow_any_key, file=settings.api_keys_file)
        if ring.open:
            log.warning("auth: any bearer token is accepted (DGEMMA_ALLOW_ANY_KEY=true, no keys configured)")
        else:
            log.info("auth: %d API key(s) accepted", len(ring._digests))
        return ring

    def _use(self, keys: list[str]) -> None:
        digests = tuple(digest(k) for k in dict.fromkeys(keys) if k)
        # Salts first: a request between the two assignments finds its salt (or computes the same one).
        self._salts = {d: self._salt(d) for d in digests}
        self._digests = digests
        self.open = not digests

    def reload(self) -> None:
        """Take the file's keys as they are now. A file that cannot be read or holds no key (a
        Secret Manager read that failed, a bad version) keeps the keys in force: never open, never 5xx."""
        if self._file is None:
            return
        try:
            keys = read_keys(self._file)
        except (OSError, UnicodeDecodeError) as e:
            log.warning("auth: %s could not be read (%s); the keys in force stay", self._file, e)
            return
        if not keys:
            log.warning("auth: %s holds no key; the keys in force stay", self._file)
            return
        before = self._digests
        self._use(self._fixed + keys)
        if self._digests != before:
            log.info("auth: %d API key(s) accepted (the keys file changed)", len(self._digests))

    @contextlib.asynccontextmanager
    async def reloading(self, interval_s: float) -> AsyncIterator[None]:
        """While open, `reload` every `interval_s` seconds, off the event loop (a Secret Manager
        volume fetches the value on each read); nothing without a file or with 0. Requests only
        read the keys in force: no file access, no clock on the hot path."""
        if self._file is None or interval_s <= 0:
            yield
            return

        async def every() -> None:
            while True:
                await asyncio.sleep(interval_s)
                await asyncio.to_thread(self.reload)

        task = asyncio.create_task(every())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def check(self, authorization: str) -> bytes:
        """The caller: the digest of its key (of any bearer token when open). Raise Unauthorized
        unless `authorization` is `Bearer <an accepted key>`."""
        scheme, _, token = authorization.partition(" ")
        caller = digest(token.strip())  # hashed once: the comparison and the cache salt use it
        if self.open:
            return caller
        if not is_kept(caller, self._digests) or scheme.lower() != "bearer":
            raise Unauthorized("Invalid or missing API key.")
        return caller

    def cache_salt(self, caller: bytes) -> str:
        """The engine's prefix-cache salt for a caller (`check`'s result): one per key, so a key's
        requests cannot learn from timing whether another key sent the same state."""
        return self._salts.get(caller) or self._salt(caller)

    def _salt(self, caller: bytes) -> str:
        # 43 base64url characters (256 bits): none of the characters vLLM forbids (@ / \ NUL).
        mac = hmac.new(self._salt_secret, caller, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
