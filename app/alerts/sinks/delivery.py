"""What every HTTP sink shares: the `Sink` protocol, one httpx client, POST with retries, `SinkError`.

Each HTTP delivery is retried (tenacity, and app/core/backoff.py: exponential backoff with full
jitter, `Retry-After` honoured and capped) on connect errors, timeouts, 429 and 5xx, never on another
4xx (a configuration problem) and never after a 2xx. A delivery that still fails raises `SinkError`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from app.alerts.records import Alert, Page
from app.alerts.sinks.config import _HttpSinkConfig
from app.core.backoff import Backoff
from app.core.retry import retry_after_s

log = logging.getLogger("app.alerts.sinks")  # the package's name, not __name__: operators query it

USER_AGENT = "dgemma-alert-router"
_ERROR_BODY_MAX = 300  # of a failed answer's body, quoted in SinkError


class SinkError(RuntimeError):
    """A delivery failed for good. The message names the sink, the HTTP status or error, and the
    attempts; `retryable` is True when the last failure was transient (the sink gave up retrying),
    False when the receiver refused the delivery (a 4xx other than 429: a configuration problem)."""

    def __init__(
        self, sink: str, kind: str, problem: str, *, attempts: int, status: int | None, retryable: bool
    ) -> None:
        plural = "s" if attempts != 1 else ""
        super().__init__(f"sink {sink!r} ({kind}): {problem} after {attempts} attempt{plural}")
        self.sink = sink
        self.status = status
        self.attempts = attempts
        self.retryable = retryable


class _Transient(Exception):
    """One attempt failed in a way worth another: a connect error, a timeout, 429 or 5xx."""

    def __init__(self, problem: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.status = status
        self.retry_after = retry_after


class _Refused(Exception):
    """The receiver refused the delivery (another 4xx, a 3xx) or the request cannot be sent."""

    def __init__(self, problem: str, status: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.status = status


# Transport errors worth another attempt; the others (UnsupportedProtocol, LocalProtocolError) would
# fail the same way again.
_TRANSIENT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)


def _body_excerpt(r: httpx.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return " ".join(r.text.split())[:_ERROR_BODY_MAX]
    if isinstance(data, dict):
        # PagerDuty: {"status": "invalid event", "message": "Event object is invalid", "errors": [...]}
        parts = [str(data[k]) for k in ("message", "error", "detail") if data.get(k)]
        if isinstance(data.get("errors"), list):
            parts += [str(e) for e in data["errors"]]
        if parts:
            return "; ".join(parts)[:_ERROR_BODY_MAX]
    return json.dumps(data)[:_ERROR_BODY_MAX]


def _transport_problem(e: Exception) -> str:
    # str(e) of a connect error is the OS's message; httpx puts no URL in it (URLs may be secrets).
    detail = str(e).strip()
    return f"{type(e).__name__}: {detail}"[:_ERROR_BODY_MAX] if detail else type(e).__name__


class SharedClient:
    """The one httpx client of a set of sinks: closed with the last of them if build_sinks made it;
    a client passed in stays open (its owner closes it)."""

    def __init__(self, client: httpx.AsyncClient | None) -> None:
        self._client = client
        self._owned = client is None
        self._users = 0

    def acquire(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                headers={"user-agent": USER_AGENT},
                follow_redirects=False,  # a redirect means a wrong URL: fail, don't re-POST elsewhere
                limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            )
        self._users += 1
        return self._client

    async def release(self) -> None:
        self._users -= 1
        if self._users == 0 and self._owned and self._client is not None:
            await self._client.aclose()


class Sink(Protocol):
    name: str

    async def deliver(self, page: Page) -> None: ...  # raises SinkError after its retries

    async def resolve(self, alert: Alert) -> None: ...  # raises SinkError after its retries

    async def aclose(self) -> None: ...


class HttpSink:
    """POSTs JSON with retries; subclasses say what to POST where."""

    kind: ClassVar[str]

    def __init__(self, name: str, config: _HttpSinkConfig, shared: SharedClient) -> None:
        self.name = name
        self._config = config
        self._shared = shared
        self._http = shared.acquire()
        self._closed = False

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._shared.release()

    async def _post(self, url: str, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        """POST `body` until a 2xx, a refusal, or the last attempt. Raises SinkError."""
        cfg = self._config
        content = json.dumps(body, default=str, ensure_ascii=False).encode()
        sent = {"content-type": "application/json", "user-agent": USER_AGENT, **(headers or {})}
        attempts = 0

        async def once() -> None:
            nonlocal attempts
            attempts += 1
            try:
                # httpx's timeouts bound each read/write; this bounds the whole attempt.
                async with asyncio.timeout(cfg.timeout_s):
                    r = await self._http.post(
                        url, content=content, headers=sent, timeout=httpx.Timeout(cfg.timeout_s)
                    )
            except TimeoutError as e:
                raise _Transient(f"no answer within {cfg.timeout_s:g} s") from e
            except _TRANSIENT_ERRORS as e:
                raise _Transient(_transport_problem(e)) from e
            except httpx.HTTPError as e:
                raise _Refused(_transport_problem(e)) from e
            if r.is_success:
                return
            problem = f"HTTP {r.status_code}: {_body_excerpt(r) or r.reason_phrase}"
            if r.status_code == 429 or r.status_code >= 500:
                raise _Transient(problem, r.status_code, retry_after_s(r.headers.get("retry-after")))
            raise _Refused(problem, r.status_code)

        def before_sleep(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            log.warning(
                "sink %s (%s): attempt %d/%d failed (%s); retrying in %.2f s",
                self.name,
                self.kind,
                state.attempt_number,
                cfg.attempts,
                error,
                wait,
            )

        retrying = AsyncRetrying(
            stop=stop_after_attempt(cfg.attempts),
            wait=Backoff(cfg.backoff_s, cfg.backoff_max_s, jitter=True, retry_after_cap_s=cfg.backoff_max_s),
            retry=retry_if_exception_type(_Transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            await retrying(once)
        except _Transient as e:
            raise SinkError(
                self.name, self.kind, e.problem, attempts=attempts, status=e.status, retryable=True
            ) from None
        except _Refused as e:
            raise SinkError(
                self.name, self.kind, e.problem, attempts=attempts, status=e.status, retryable=False
            ) from None
