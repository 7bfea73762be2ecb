"""API keys: read once at start, kept only as SHA-256 digests, compared in constant time; and the
engine prefix-cache salt of each caller."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os

from app.core.config import ConfigError
from app.core.errors import Unauthorized
from app.core.secrets import digest, is_kept
from app.gateway.settings import GatewaySettings

log = logging.getLogger("app.auth")


class KeyRing:
    """The accepted keys; empty only when any bearer token is explicitly allowed."""

    def __init__(self, keys: list[str], *, allow_any: bool) -> None:
        self._digests = tuple(digest(k) for k in dict.fromkeys(keys) if k)
        self.open = not self._digests
        # Salts are keyed by a secret of this process: unguessable, and never derivable from a key
        # (vLLM asks for random, protected salts). The engine's cache lives as long as this process.
        self._salt_secret = os.urandom(32)
        self._salts = {d: self._salt(d) for d in self._digests}
        if self.open and not allow_any:
            raise ConfigError(
                "no API keys: set DGEMMA_API_KEYS or DGEMMA_API_KEYS_FILE, or DGEMMA_ALLOW_ANY_KEY=true "
                "to accept any bearer token (local use only)"
            )

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> KeyRing:
        keys = [k.get_secret_value().strip() for k in settings.api_keys]
        if settings.api_keys_file is not None:
            keys += [line.strip() for line in settings.api_keys_file.read_text().splitlines()]
        ring = cls(keys, allow_any=settings.allow_any_key)
        if ring.open:
            log.warning("auth: any bearer token is accepted (DGEMMA_ALLOW_ANY_KEY=true, no keys configured)")
        else:
            log.info("auth: %d API key(s) accepted", len(ring._digests))
        return ring

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
