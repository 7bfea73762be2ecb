"""The kit's one Jev client against the real gateway app (over the scripted engine), behind a
transport that sheds the first requests as a saturated or starting service would: the opt-in retry
waits what Retry-After says and gives up after its attempts; without it, the first refusal is the
caller's, typed by status."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from app.core.errors import EngineUnavailable, InvalidRequest, ModelNotFound
from app.gateway.main import create_app
from app.jev.client import JevClient, Retry
from tests.helpers.gateway import ScriptedEngine, decision, gateway_settings

pytestmark = pytest.mark.inprocess

QUESTION = {"page": {"type": "noul", "instructions": "Should this wake someone up?"}}


class Shedding(httpx.AsyncBaseTransport):
    """Answers the first `shed` requests with the given statuses, then passes them to the gateway."""

    def __init__(self, statuses: list[tuple[int, dict[str, str]]]) -> None:
        self.statuses = list(statuses)
        self.seen = 0
        self.gateway = httpx.ASGITransport(app=create_app(gateway_settings(), engine=ScriptedEngine()))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen += 1
        if self.statuses:
            status, headers = self.statuses.pop(0)
            return httpx.Response(status, json={"detail": "busy"}, headers=headers)
        return await self.gateway.handle_async_request(request)


async def test_a_shed_decision_is_retried_after_what_retry_after_says() -> None:
    transport = Shedding([(503, {"retry-after": "0"}), (429, {"retry-after": "0"})])
    async with JevClient("http://gw", api_key="k", retry=Retry(attempts=3), transport=transport) as client:
        response = await client.decide(decision(QUESTION))
    assert transport.seen == 3 and 0.0 <= response["answers"]["page"]["noul"] <= 1.0


async def test_the_retry_gives_up_after_its_attempts_and_never_retries_a_refusal() -> None:
    transport = Shedding([(503, {"retry-after": "0"})] * 3)
    async with JevClient("http://gw", retry=Retry(attempts=2), transport=transport) as client:
        with pytest.raises(EngineUnavailable, match="answered 503: busy"):
            await client.decide(decision(QUESTION))
        assert transport.seen == 2
        refused = Shedding([(400, {}), (400, {})])
        client._http._transport = refused  # the same client, a service that refuses the request
        with pytest.raises(InvalidRequest, match="answered 400"):
            await client.decide(decision(QUESTION))
        assert refused.seen == 1


async def test_without_a_retry_the_first_refusal_is_the_callers_typed_by_status() -> None:
    transport = Shedding([(503, {"retry-after": "7"}), (404, {})])
    async with JevClient("http://gw", transport=transport) as client:
        with pytest.raises(EngineUnavailable) as shed:
            await client.decide(decision(QUESTION))
        assert shed.value.retry_after == 7 and transport.seen == 1
        with pytest.raises(ModelNotFound):
            await client.decide(decision(QUESTION))
        assert (await client.models())[0] == "dgemma"


def test_the_wait_is_the_services_retry_after_capped_else_a_bounded_backoff() -> None:
    def state(error: Exception, attempt: int = 1) -> Any:
        outcome = SimpleNamespace(exception=lambda: error)
        return SimpleNamespace(outcome=outcome, attempt_number=attempt)

    assert Retry().wait(state(EngineUnavailable("busy", retry_after=3))) == 3.0
    assert Retry(cap_s=2).wait(state(EngineUnavailable("busy", retry_after=30))) == 2.0
    assert all(0 <= Retry().wait(state(EngineUnavailable("busy"), n)) <= 8 for n in range(1, 12))


class Recording(httpx.AsyncBaseTransport):
    """The real gateway app, which read its keys file once (as an instance between two reloads);
    records the key each request sent."""

    def __init__(self, keys_file: Any) -> None:
        settings = gateway_settings(allow_any_key=False, api_keys_file=keys_file)
        self.gateway = httpx.ASGITransport(app=create_app(settings, engine=ScriptedEngine()))
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request.headers.get("authorization", "").removeprefix("Bearer "))
        return await self.gateway.handle_async_request(request)


async def test_a_rotated_key_file_has_no_401_window(tmp_path: Any) -> None:
    """`dgemma keys rotate` puts a new key first. A router that has read it before a gateway instance
    has gets a 401 for it, and the same call goes on with the next key; once the gateway knows the new
    key, the first call succeeds with it; a key file whose keys the gateway has never had is a 401."""
    from app.core.errors import Unauthorized
    from app.core.secrets import KeyFile

    service, router = tmp_path / "service-keys", tmp_path / "router-keys"
    service.write_text("old-key\n")
    router.write_text("new-key\nold-key\n")
    keys = KeyFile(router, reload_s=0)
    transport = Recording(service)
    async with JevClient("http://gw", api_key=keys, transport=transport) as client:
        assert 0.0 <= (await client.decide(decision(QUESTION)))["answers"]["page"]["noul"] <= 1.0
    assert transport.sent == ["new-key", "old-key"]
    service.write_text("new-key\nold-key\n")
    transport = Recording(service)  # an instance that has read the rotation
    async with JevClient("http://gw", api_key=keys, transport=transport) as client:
        await client.decide(decision(QUESTION))
    assert transport.sent == ["new-key"]
    router.write_text("other-key\n")  # re-read at once (reload_s=0)
    async with JevClient("http://gw", api_key=keys, transport=Recording(service)) as client:
        with pytest.raises(Unauthorized, match="401"):
            await client.decide(decision(QUESTION))
    router.unlink()  # a mount's instant of absence keeps what was read
    assert keys.keys() == ["other-key"]
