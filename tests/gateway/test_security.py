"""The per-key prefix-cache salt on the real engine: vLLM takes it, a key's repeated state hits the
cache, another key's identical state does not, and without isolation the two keys share hits (read
off vLLM's own `vllm:prefix_cache_hits` counter)."""

from __future__ import annotations

import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.gateway import NOUL, GatewayFactory, decision

pytestmark = [pytest.mark.integration, pytest.mark.engine]
KEYS = "alpha-cache-key-0001,bravo-cache-key-0002"


def _hits(engine: httpx.Client) -> float:
    text = engine.get("/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "vllm:prefix_cache_hits"
        for sample in family.samples
        if sample.name.endswith("_total")
    )


def _new_hits(engine: httpx.Client, url: str, key: str, state: str) -> float:
    before = _hits(engine)
    body = decision(NOUL, state=state, read_policy={"mode": "single"})
    r = httpx.post(f"{url}/v1/systemone", json=body, headers={"authorization": f"Bearer {key}"}, timeout=120)
    assert r.status_code == 200, r.text
    return _hits(engine) - before


def test_each_key_has_a_prefix_cache_of_its_own(
    gateway_factory: GatewayFactory, engine: httpx.Client
) -> None:
    alpha, bravo = KEYS.split(",")
    isolated = gateway_factory(api_keys=KEYS, allow_any_key=False)
    shared = gateway_factory(api_keys=KEYS, allow_any_key=False, cache_isolation=False)
    # A state never sent before, long enough to fill several cache blocks.
    state = f"{uuid.uuid4()} " + " ".join(f"disk usage on db-{i} grew to {90 + i % 9}%" for i in range(60))

    assert _new_hits(engine, isolated, alpha, state) == 0, "a new state hits nothing"
    assert _new_hits(engine, isolated, alpha, state) > 0, "the same key's repeat hits its cache"
    assert _new_hits(engine, isolated, bravo, state) == 0, "another key's identical state hits nothing"
    # Without isolation the salt is gone: the first unsalted read fills, the other key's hits.
    assert _new_hits(engine, shared, alpha, state) == 0
    assert _new_hits(engine, shared, bravo, state) > 0
