"""The one way to wait for something: poll a check until it holds, a deadline passes or an abort."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import httpx

T = TypeVar("T")


def wait_until(
    check: Callable[[], T],
    timeout_s: float,
    *,
    interval_s: float = 0.5,
    abort: Callable[[], bool] = lambda: False,
    errors: tuple[type[BaseException], ...] = (),
) -> T | None:
    """Call `check` until it returns something truthy, which is returned. None when `timeout_s`
    passes or `abort()` turns true first. An exception of a type in `errors` counts as "not yet"."""
    deadline = time.monotonic() + timeout_s
    while True:
        if abort():
            return None
        result: T | None
        try:
            result = check()
        except errors:
            result = None
        if result:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        time.sleep(min(interval_s, remaining))


def wait_http_ok(
    url: str, timeout_s: float, *, interval_s: float = 0.5, abort: Callable[[], bool] = lambda: False
) -> bool:
    """Whether GET `url` answered 200 within `timeout_s` (unreachable counts as not yet)."""
    ok = wait_until(
        lambda: httpx.get(url, timeout=2.0).status_code == 200,
        timeout_s,
        interval_s=interval_s,
        abort=abort,
        errors=(httpx.HTTPError,),
    )
    return bool(ok)
