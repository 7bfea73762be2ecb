"""API keys: read once at start, kept only as SHA-256 digests, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import logging

from app.config import ConfigError
from app.errors import Unauthorized
from app.settings import GatewaySettings

log = logging.getLogger("app.auth")


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


class KeyRing:
    """The accepted keys; empty only when any bearer token is explicitly allowed."""

    def __init__(self, keys: list[str], *, allow_any: bool) -> None:
        self._digests = tuple(_digest(k.encode()) for k in dict.fromkeys(keys) if k)
        self.open = not self._digests
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

    def check(self, authorization: str) -> None:
        """Raise Unauthorized unless `authorization` is `Bearer <an accepted key>`."""
        if self.open:
            return
        scheme, _, token = authorization.partition(" ")
        given = _digest(token.strip().encode())
        # Digests have one length, and every key is compared, so timing tells nothing.
        ok = False
        for key in self._digests:
            ok |= hmac.compare_digest(given, key)
        if scheme.lower() != "bearer" or not ok:
            raise Unauthorized("Invalid or missing API key.")
