"""The kit's one client of the Jev API (`POST /v1/systemone`, `/v1/models`, `/readyz`): the alert
router, `dgemma eval` and `calibrate`, and the deploy's smoke decision all use it.

It sends the request as given (the wire's model, or a JSON body as a labelled file holds it),
checks a 200 against the response model (app/jev/wire.py) and maps every other status back to the
kit's domain errors, so that a caller decides by error class, not by status code:
`EngineUnavailable` (429, 5xx, unreachable, too slow) means the service cannot answer now;
`InvalidRequest` and the others mean the request or the caller's configuration is wrong.
Retrying is opt-in (`Retry`): the router does not wait (it pages on its fallback route and
classifies later), an eval waits its turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from app.core.backoff import Backoff
from app.core.errors import (
    EngineBadAnswer,
    EngineUnavailable,
    InvalidRequest,
    ModelNotFound,
    ServiceError,
    Unauthorized,
)
from app.core.identity import IdTokens, audience_of, auth_headers
from app.core.retry import retry_after_s
from app.core.secrets import KeyFile
from app.jev.wire import MAX_TIMEOUT_S, TIMEOUT_HEADER, SystemOneRequest, SystemOneResponse

# Statuses that mean "not now": a cold or saturated service, one that just failed.
_NOT_NOW = {429, 500, 502, 503, 504}
# Of those, the ones a retry may wait out: the service sheds load (429) or is starting or draining (503).
_WAIT_OUT = {429, 503}


class _Transient(EngineUnavailable):
    """A 429 or 503, a dropped connection or a timeout: worth another attempt under a `Retry`."""


@dataclass(frozen=True)
class Retry:
    """Retry a transient failure (429, 503, a dropped connection, a timeout) up to `attempts` tries
    in all, waiting what the service's Retry-After says, else full-jitter exponential backoff (both
    capped)."""

    attempts: int = 6
    base_s: float = 0.5
    cap_s: float = 60.0

    @property
    def wait(self) -> Backoff:
        """The wait between attempts: the service's Retry-After up to `cap_s`, else full jitter from
        `base_s`, never more than 8 s (a service that asks for nothing is worth asking again soon)."""
        return Backoff(self.base_s, min(8.0, self.cap_s), jitter=True, retry_after_cap_s=self.cap_s)


class JevClient:
    """`decide(body)` -> a decision's whole response as JSON; `response(request)` -> the same, as the
    wire's response model; `models()`; `ready()` -> whether it answers now (on a scaled-to-zero Cloud
    Run service, the request that starts an instance)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | KeyFile | None = None,  # a KeyFile: re-read, its others tried on a 401
        id_tokens: IdTokens | None = None,
        headers: Mapping[str, str] | None = None,  # sent as they are (a caller that minted its own)
        timeout_s: float = 120.0,
        retry: Retry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,  # tests: an app in process
    ) -> None:
        self.url = url.rstrip("/")
        self._api_key = api_key
        self._id_tokens = id_tokens
        self._audience = audience_of(self.url) if id_tokens else ""
        self._retry = retry
        # The gateway is told to answer by then, half a second before this client gives up (as its
        # default deadline leaves the SDK's 10 s), so a slow decision ends in a retry hint, not a hang.
        self._timeout_header = {TIMEOUT_HEADER: f"{min(MAX_TIMEOUT_S, max(0.1, timeout_s - 0.5)):g}"}
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers=dict(headers or {}),
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
            transport=transport,
        )

    async def __aenter__(self) -> JevClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def _keys(self) -> list[str | None]:
        """The keys to send, in order: one, or a key file's (the first, then the others)."""
        if isinstance(self._api_key, KeyFile):
            return [*self._api_key.keys()] or [None]
        return [self._api_key]

    async def _headers(self, key: str | None = None) -> dict[str, str]:
        key = key if key is not None else self._keys()[0]
        if self._id_tokens is None:
            return auth_headers(None, key)
        # Minting may call the metadata server (blocking google-auth): off the event loop.
        return await asyncio.to_thread(self._id_tokens.headers, self._audience, key)

    async def ready(self, timeout_s: float = 10.0) -> bool:
        try:
            r = await self._http.get("/readyz", headers=await self._headers(), timeout=timeout_s)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    async def models(self) -> list[str]:
        """The model names `/v1/models` lists, the served one first. Never retried: the first contact
        with a service says at once whether it can be reached."""
        r = await self._once("GET", "/v1/models")
        names = [str(m["name"]) for m in r.json().get("models") or []]
        if not names:
            raise EngineBadAnswer("the decision service lists no model (GET /v1/models)")
        return names

    async def decide(self, body: SystemOneRequest | Mapping[str, Any]) -> dict[str, Any]:
        """One decision's response as JSON (answers, usage, diagnostics), checked against the wire's
        response model. Raises a ServiceError when it cannot be had (see the module's docstring)."""
        return (await self._decided(body))[1]

    async def response(self, request: SystemOneRequest) -> SystemOneResponse:
        """One decision's response, as the wire's model (typed answers and diagnostics)."""
        return (await self._decided(request))[0]

    async def _decided(
        self, body: SystemOneRequest | Mapping[str, Any]
    ) -> tuple[SystemOneResponse, dict[str, Any]]:
        """The response, checked once: the model and the JSON it was read from."""
        if isinstance(body, SystemOneRequest):
            body = body.model_dump(mode="json", exclude_none=True)
        r = await self._send("POST", "/v1/systemone", json=body, headers=self._timeout_header)
        try:
            data: dict[str, Any] = r.json()
            return SystemOneResponse.model_validate(data), data
        except (ValueError, ValidationError) as e:
            raise EngineBadAnswer(f"the decision service answered with an unexpected body: {e}") from e

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if self._retry is None:
            return await self._once(method, path, **kwargs)
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(_Transient),
            stop=stop_after_attempt(self._retry.attempts),
            wait=self._retry.wait,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._once(method, path, **kwargs)
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _once(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        keys = self._keys()
        for key in keys[:-1]:  # a rotation under way: the service may not yet have read the new key
            r = await self._request(method, path, key, **kwargs)
            if r.status_code != 401:
                return self._checked(r)
        return self._checked(await self._request(method, path, keys[-1], **kwargs))

    async def _request(self, method: str, path: str, key: str | None, **kwargs: Any) -> httpx.Response:
        try:
            headers = {**await self._headers(key), **kwargs.pop("headers", {})}
            return await self._http.request(method, path, headers=headers, **kwargs)
        except httpx.TimeoutException as e:
            raise _Transient(f"the decision service did not answer in time ({type(e).__name__})") from e
        except httpx.TransportError as e:
            raise _Transient(f"{self.url} cannot be reached: {type(e).__name__}: {e}") from e

    def _checked(self, r: httpx.Response) -> httpx.Response:
        if r.status_code == 200:
            return r
        detail = _detail(r)
        if r.status_code in _NOT_NOW:
            retry = retry_after_s(r.headers.get("retry-after"))
            kind = _Transient if r.status_code in _WAIT_OUT else EngineUnavailable
            raise kind(
                f"the service answered {r.status_code}: {detail}",
                retry_after=None if retry is None else round(retry),
            )
        error: type[ServiceError] = {401: Unauthorized, 403: Unauthorized, 404: ModelNotFound}.get(
            r.status_code, InvalidRequest
        )
        raise error(f"the service answered {r.status_code}: {detail}")


def _detail(r: httpx.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return r.text[:300] or "(no body)"
    detail = data.get("detail") if isinstance(data, dict) else data
    return str(detail)[:500]
