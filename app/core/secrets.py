"""How the kit keeps secrets it checks (API keys, senders' credentials): SHA-256 digests, compared
in constant time."""

from __future__ import annotations

import hashlib
import hmac

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
