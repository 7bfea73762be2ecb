"""The hand-written hostile bodies (devtools/bench/reliability/nasty.py) against the gateway in process:
each gets one of its allowed statuses, never a 5xx, and every 4xx says why (`make reliability`
sends them to a real gateway process and reports its memory)."""

from __future__ import annotations

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
