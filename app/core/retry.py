"""How the kit's clients read a server's `Retry-After` (the one reading: the router's sinks, the Jev
client)."""

from __future__ import annotations

import email.utils
import math
import time


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks for (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)  # the RFC says integer seconds; fractions are accepted, harmlessly
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None
