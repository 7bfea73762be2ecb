"""The hand-written hostile bodies (devtools/bench/reliability/nasty.py) against the gateway in process:
each gets one of its allowed statuses, never a 5xx, and every 4xx says why (`make reliability`
sends them to a real gateway process and reports its memory)."""

from __future__ import annotations

import httpx
import pytest

from devtools.bench.reliability import nasty
from tests.helpers.gateway import AppFactory

pytestmark = pytest.mark.inprocess

LIMIT = 1 << 20  # a smaller body limit than the default keeps the big cases quick


@pytest.mark.parametrize("case", nasty.CASES, ids=[c.name for c in nasty.CASES])
async def test_a_nasty_body_gets_a_clear_4xx_or_an_answer(make_app: AppFactory, case: nasty.Case) -> None:
    _, gw = make_app(max_body_bytes=LIMIT)
    content = case.make(LIMIT)
    r = await gw.post(nasty.PATH, content=content, headers=case.headers)
    assert nasty.problem(case, r) is None, (case.name, r.status_code, r.text[:300])
    assert (await gw.get("/healthz")).status_code == 200


async def test_a_shed_case_is_sent_again_and_a_server_error_is_not() -> None:
    """The corpus runner resends a case shed with 429 after its Retry-After, as a client would; a 503
    (with Retry-After or not: the engine's failure, never the gateway's line) and the last 429 count."""
    busy = {"retry-after": "0"}
    script = [
        httpx.Response(429, headers=busy, json={"detail": "busy"}),  # the first case...
        httpx.Response(200, json={"answers": {}}),  # ...sent again
        httpx.Response(503, headers=busy, json={"detail": "the engine failed"}),  # the second: not resent
        *[httpx.Response(429, headers=busy, json={"detail": "busy"})] * (nasty.SHED_RETRIES + 1),
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        return script.pop(0) if script else httpx.Response(200, json={"answers": {}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://gw") as client:
        results = await nasty.send_all(client, LIMIT)
    first, second, third = results[:3]
    assert (first.status, first.shed) == (200, 1)
    assert (second.status, second.shed) == (503, 0) and second.problem
    assert (third.status, third.shed) == (429, nasty.SHED_RETRIES)
    assert len(results) == len(nasty.CASES)
