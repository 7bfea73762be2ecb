"""Security of the gateway in process: each key's engine calls carry a prefix-cache salt of their
own, and credentials never come back in an answer or an error."""

from __future__ import annotations

import re

import pytest

from tests.helpers.gateway import NOUL, AppFactory, ScriptedEngine, decision

pytestmark = pytest.mark.inprocess

KEYS = "key-alpha-0123456789,key-bravo-9876543210"


async def _salts(
    make_app: AppFactory, scripted: ScriptedEngine, tokens: list[str], **settings: object
) -> list[str | None]:
    """The salt each token's decision sent (every engine call of a decision sends the same one)."""
    _, gw = make_app(**settings)
    salts = []
    for token in tokens:
        before = len(scripted.calls)
        r = await gw.post("/v1/systemone", json=decision(NOUL), headers={"authorization": f"Bearer {token}"})
        assert r.status_code == 200, r.text
        (salt,) = {call.get("cache_salt") for call in scripted.calls[before:]}
        salts.append(salt)
    return salts


async def test_each_key_salts_the_engine_cache_with_a_salt_of_its_own(
    make_app: AppFactory, scripted: ScriptedEngine
) -> None:
    a, b = KEYS.split(",")
    salts = await _salts(make_app, scripted, [a, b, a], api_keys=KEYS, allow_any_key=False)
    assert salts[0] == salts[2] != salts[1]
    for salt in salts:
        assert salt is not None
        # vLLM's rule: 1-128 characters, none of @ / \ NUL; 256 bits, as it recommends.
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", salt)
        assert a not in salt and b not in salt


async def test_salts_are_per_token_when_any_token_is_accepted(
    make_app: AppFactory, scripted: ScriptedEngine
) -> None:
    salts = await _salts(make_app, scripted, ["one", "two", "one"])
    assert salts[0] == salts[2] != salts[1]


async def test_salts_are_a_secret_of_the_process_not_of_the_key(
    make_app: AppFactory, scripted: ScriptedEngine
) -> None:
    """Two gateways with the same key salt differently: a salt cannot be computed from the key."""
    key = KEYS.split(",")[0]
    first = await _salts(make_app, scripted, [key, key], api_keys=KEYS, allow_any_key=False)
    second = await _salts(make_app, scripted, [key], api_keys=KEYS, allow_any_key=False)
    assert first[0] == first[1] != second[0]


async def test_cache_isolation_off_sends_no_salt(make_app: AppFactory, scripted: ScriptedEngine) -> None:
    assert await _salts(make_app, scripted, ["one", "two"], cache_isolation=False) == [None, None]


async def test_a_wrong_key_is_never_echoed(make_app: AppFactory) -> None:
    _, gw = make_app(api_keys=KEYS, allow_any_key=False)
    wrong = "key-alpha-0123456789-but-wrong"
    for headers in ({"authorization": f"Bearer {wrong}"}, {"authorization": wrong}):
        r = await gw.post("/v1/systemone", json=decision(NOUL), headers=headers)
        assert r.status_code == 401 and r.json()["detail"]
        assert wrong not in r.text and "key-alpha" not in r.text
