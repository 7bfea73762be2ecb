"""The router's client of the decision service: a Jev client over HTTP, like any other.

It sends the gateway's own request model and reads its response model (app/jev/wire.py), and maps
the statuses back to the gateway's domain errors, so the router decides "page on the fallback now"
by error class, not by status code: `EngineUnavailable` (503, 429, 502, unreachable, too slow) means
the model cannot answer now; `InvalidRequest` means the policy asks something the service refuses.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from pydantic import ValidationError

from app.core.errors import (
    EngineBadAnswer,
    EngineUnavailable,
    InvalidRequest,
    ModelNotFound,
    ServiceError,
    Unauthorized,
)
from app.core.identity import IdTokens, audience_of, auth_headers
from app.jev.wire import SystemOneRequest, SystemOneResponse

# Statuses that mean "not now": a cold or saturated service, one that just failed. The router pages
# on its fallback route and retries the classification later.
_NOT_NOW = {429, 500, 502, 503, 504}


class JevClient:
    """`answers(request)` -> the gateway's answers; `ready()` -> whether it answers now (and, on a
    scaled-to-zero Cloud Run service, the request that starts an instance)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        id_tokens: IdTokens | None = None,
        timeout_s: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,  # tests: the gateway app in process
    ) -> None:
        self.url = url.rstrip("/")
        self._api_key = api_key
        self._id_tokens = id_tokens
        self._audience = audience_of(self.url) if id_tokens else ""
        self._http = httpx.AsyncClient(
            base_url=self.url, timeout=httpx.Timeout(timeout_s, connect=10.0), transport=transport
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _headers(self) -> dict[str, str]:
        if self._id_tokens is None:
            return auth_headers(None, self._api_key)
        # Minting may call the metadata server (blocking google-auth): off the event loop.
        return await asyncio.to_thread(self._id_tokens.headers, self._audience, self._api_key)

    async def ready(self, timeout_s: float = 10.0) -> bool:
        try:
            r = await self._http.get("/readyz", headers=await self._headers(), timeout=timeout_s)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    async def answers(self, request: SystemOneRequest) -> tuple[dict[str, Any], frozenset[str]]:
        """One Jev decision's answers (probabilities included), as JSON, and the names of those the
        gateway calibrated. Raises EngineUnavailable when it cannot be had now, another
        ServiceError when the request or the router's configuration is wrong."""
        body = request.model_dump(mode="json", exclude_none=True)
        try:
            r = await self._http.post("/v1/systemone", json=body, headers=await self._headers())
        except httpx.TimeoutException as e:
            raise EngineUnavailable(
                f"the decision service did not answer in time ({type(e).__name__})"
            ) from e
        except httpx.HTTPError as e:
            raise EngineUnavailable(f"the decision service is not reachable ({type(e).__name__})") from e
        if r.status_code == 200:
            try:
                response = SystemOneResponse.model_validate(r.json())
            except (ValueError, ValidationError) as e:
                raise EngineBadAnswer(f"the decision service answered with an unexpected body: {e}") from e
            answers: dict[str, Any] = response.model_dump(mode="json")["answers"]
            return answers, frozenset(name for name, d in response.diagnostics.items() if d.calibrated)
        detail = _detail(r)
        if r.status_code in _NOT_NOW:
            retry = r.headers.get("retry-after")
            raise EngineUnavailable(
                f"the decision service answered {r.status_code}: {detail}",
                retry_after=int(retry) if retry and retry.isdigit() else None,
            )
        error: type[ServiceError] = {401: Unauthorized, 403: Unauthorized, 404: ModelNotFound}.get(
            r.status_code, InvalidRequest
        )
        raise error(f"the decision service refused the request ({r.status_code}): {detail}")


def _detail(r: httpx.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return r.text[:300] or "(no body)"
    detail = data.get("detail") if isinstance(data, dict) else data
    return str(detail)[:500]
