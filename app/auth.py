"""API keys: read once at start, kept only as SHA-256 digests, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import logging

from app.config import ConfigError
from app.errors import Unauthorized
from app.settings import GatewaySettings

log = logging.getLogger("app.auth")


_ABSENT = hashlib.sha256(b"\x00absent").digest()  # stands in for a missing credential


def digest(secret: str) -> bytes:
    """How a secret is kept: its SHA-256 (one length, so comparisons take one time)."""
    return hashlib.sha256(secret.encode()).digest()


def matches(given: str | None, digests: tuple[bytes, ...]) -> bool:
    """Whether `given` (None: the request carries none) is one of the kept secrets. Every digest is
    compared, in constant time, whatever `given` is: the time taken says nothing about them."""
    candidate = digest(given) if given is not None else _ABSENT
    ok = False
    for kept in digests:
        ok |= hmac.compare_digest(candidate, kept)
    return ok and given is not None


class KeyRing:
    """The accepted keys; empty only when any bearer token is explicitly allowed."""

    def __init__(self, keys: list[str], *, allow_any: bool) -> None:
        self._digests = tuple(digest(k) for k in dict.fromkeys(keys) if k)
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
        if not matches(token.strip(), self._digests) or scheme.lower() != "bearer":
            raise Unauthorized("Invalid or missing API key.")
