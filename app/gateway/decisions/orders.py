"""The option orders reads go through (standard library only: the toy's training imports it too).

Order k over n options: 0 the identity, 1 its reverse, k >= 2 shuffles seeded by (n, attempt), all
distinct, so the same request always gets the same orders.
"""

from __future__ import annotations

import hashlib
import random


def option_order(n: int, k: int) -> tuple[int, ...]:
    """The k-th distinct option order over n options (0: identity, 1: reversed, then shuffles)."""
    seen: list[tuple[int, ...]] = []
    identity = tuple(range(n))
    candidates = [identity, identity[::-1]]
    attempt = 0
    while len(seen) <= k:
        if candidates:
            cand = candidates.pop(0)
        else:
            # Seeded by (n, attempt) only: the same request always gets the same orders.
            rng = random.Random(hashlib.sha256(f"order:{n}:{attempt}".encode()).digest())
            perm = list(identity)
            rng.shuffle(perm)
            cand = tuple(perm)
            attempt += 1
        if cand not in seen:
            seen.append(cand)
        if attempt > 10_000:
            raise ValueError(f"fewer than {k + 1} distinct orders of {n} options")
    return seen[k]
