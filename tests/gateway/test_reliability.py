"""The short version of `make reliability`, on the session's engine: schemathesis on the gateway and
every webhook, the nasty bodies, overload at 2x and 5x the measured capacity, a slow engine, and the
run's credentials searched for in every log and recorded response. The same steps and the same
verdict as the full run, at sizes bounded for CI (SIGTERM and the engine's death are proven by
tests/deploy/runtime/test_supervisor.py and test_drain.py here, measured by the full run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.bench.reliability import run
from devtools.bench.reliability.report import write_report
from devtools.harness.local_stack import LocalStack

pytestmark = [pytest.mark.integration, pytest.mark.engine]


def test_the_short_reliability_run_meets_every_target(stack: LocalStack, tmp_path: Path) -> None:
    figures, logs = run.on_stack(stack, tmp_path, run.SHORT, seed=12)
    figures["security"] = run.security(figures, logs)
    figures.update(short=True, sizes={}, started=0.0, seconds=0.0)
    report = write_report(figures, tmp_path).read_text()

    assert run.verdict(figures), report
    fuzzed = {f["service"]: f["requests"] for f in figures["hostile"]["fuzz"]}
    assert fuzzed["gateway"] >= 100 and all(n > 0 for n in fuzzed.values()), fuzzed
    levels = {lv["name"]: lv for lv in figures["overload"]["levels"]}
    assert levels["capacity"]["ok"] > 0 and levels["5x"]["shed"] > 0, "5x the capacity must shed some"
    assert levels["5x"]["shed_without_retry_after"] == 0
    assert len(logs) >= 4 and not figures["security"]["leaks"]
    assert "| 5x |" in report and "Slow engine" in report
