"""How the kit keeps secrets it checks (API keys, senders' credentials): SHA-256 digests, compared
in constant time."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import time
from pathlib import Path

_ABSENT = hashlib.sha256(b"\x00absent").digest()  # stands in for a missing credential


def digest(secret: str) -> bytes:
    """How a secret is kept: its SHA-256 (one length, so comparisons take one time)."""
    return hashlib.sha256(secret.encode()).digest()


def matches(given: str | None, digests: tuple[bytes, ...]) -> bool:
    """Whether `given` (None: the request carries none) is one of the kept secrets. Every digest is
    compared, in constant time, whatever `given` is: the time taken says nothing about them."""
    candidate = digest(given) if given is not None else _ABSENT
    return is_kept(candidate, digests) and given is not None


def is_kept(candidate: bytes, digests: tuple[bytes, ...]) -> bool:
    ok = False
    for kept in digests:
        ok |= hmac.compare_digest(candidate, kept)
    return ok


def read_keys(path: Path) -> list[str]:
    """A keys file's keys, one per line, in order (a Secret Manager version as `dgemma keys` writes it)."""
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


class KeyFile:
    """The keys a caller may send, from a mounted file re-read at most every `reload_s` (Cloud Run
    serves a secret's latest version on each read), so a rotation reaches a running caller; the first
    is the one to send, the others the ones to try on a 401 while the service has not yet read the
    new first key. A read that fails or finds none keeps the keys it had."""

    def __init__(self, path: Path, reload_s: float = 60.0) -> None:
        self.path, self.reload_s = path, reload_s
        self._keys = read_keys(path)
        self._read_at = time.monotonic()

    def keys(self) -> list[str]:
        if time.monotonic() - self._read_at >= self.reload_s:
            self._read_at = time.monotonic()
            # The file is mounted: an instant's absence is not a rotation.
            with contextlib.suppress(OSError):
                self._keys = read_keys(self.path) or self._keys
        return list(self._keys)
