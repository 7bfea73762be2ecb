"""Where the suite's time goes: each test's setup, call and teardown; each fixture's setups (count
and seconds, grouped by fixture); the processes the test processes start, by program. Written to
`.build/test-times.json` at the end of every session, and summed up below its results: the wall
time, the ten slowest tests and the fixtures that cost most (tests/README.md reads the file). Under
pytest-xdist each worker records its own fixtures and processes (`.build/test-times.gwN.json`), and
the session that ran them adds them up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

OUT = Path(__file__).resolve().parents[2] / ".build" / "test-times.json"
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1...: a worker of pytest-xdist


def _program(args: Any) -> str:
    """A started process's program: its file's name, or `python -m MODULE` as the module."""
    argv = [args] if isinstance(args, str | os.PathLike) else list(args or [])
    if not argv:
        return "?"
    words = str(argv[0]).split() if isinstance(args, str) else [str(a) for a in argv]
    name = Path(words[0]).name
    if name.startswith("python") and "-m" in words:
        return f"python -m {words[words.index('-m') + 1]}"
    if name.startswith("python") and len(words) > 1:
        return f"python {Path(words[1]).name}"
    return name


class Timing:
    """A pytest plugin: records as the session runs, writes and prints at its end."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.wall_started = time.time()
        self.tests: dict[str, dict[str, float]] = defaultdict(dict)
        self.fixtures: dict[str, list[float]] = defaultdict(list)
        self.scopes: dict[str, str] = {}
        self.programs: Counter[str] = Counter()
        self._popen = subprocess.Popen.__init__
        self.result: dict[str, Any] | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        programs, original = self.programs, self._popen

        def counted(popen: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
            programs[_program(args)] += 1
            original(popen, args, *rest, **kwargs)

        subprocess.Popen.__init__ = counted  # type: ignore[assignment]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]) -> Generator[None]:
        started = time.monotonic()
        yield
        if getattr(fixturedef.func, "__name__", "") == "get_direct_param_fixture_func":
            return  # a parametrize argument, not a fixture
        self.fixtures[fixturedef.argname].append(time.monotonic() - started)
        self.scopes[fixturedef.argname] = fixturedef.scope

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.tests[report.nodeid][report.when] = report.duration

    def _fixtures(self) -> dict[str, dict[str, Any]]:
        return {
            name: {"scope": self.scopes[name], "setups": len(times), "seconds": sum(times)}
            for name, times in self.fixtures.items()
        }

    def _workers(self) -> list[dict[str, Any]]:
        """What each xdist worker of this session recorded (none without xdist)."""
        found = []
        for path in sorted(OUT.parent.glob("test-times.gw*.json")):
            if path.stat().st_mtime >= self.wall_started:
                found.append(json.loads(path.read_text()))
        return found

    def summary(self) -> dict[str, Any]:
        fixtures: dict[str, dict[str, Any]] = {}
        programs = Counter(self.programs)
        workers = self._workers()
        for recorded in [self._fixtures(), *(w["fixtures"] for w in workers)]:
            for name, f in recorded.items():
                seen = fixtures.setdefault(name, {"scope": f["scope"], "setups": 0, "seconds": 0.0})
                seen["setups"] += f["setups"]
                seen["seconds"] += f["seconds"]
        for worker in workers:
            programs.update(worker["programs"])
        fixtures = {
            name: {**f, "seconds": round(f["seconds"], 2)}
            for name, f in sorted(fixtures.items(), key=lambda kv: -float(kv[1]["seconds"]))
        }
        tests = {
            nodeid: {when: round(s, 3) for when, s in phases.items()}
            for nodeid, phases in sorted(self.tests.items(), key=lambda kv: -sum(kv[1].values()))
        }
        return {
            "wall_seconds": round(time.monotonic() - self.started, 1),
            "python": sys.version.split()[0],
            "tests": tests,
            "fixtures": fixtures,
            "programs": dict(programs.most_common()),
        }

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        subprocess.Popen.__init__ = self._popen  # type: ignore[method-assign]
        OUT.parent.mkdir(parents=True, exist_ok=True)
        if WORKER:  # its own part; the session that started the workers writes the whole
            part = {"fixtures": self._fixtures(), "programs": dict(self.programs)}
            OUT.with_name(f"test-times.{WORKER}.json").write_text(json.dumps(part) + "\n")
            return
        self.result = self.summary()  # once: the terminal summary, after this, prints it
        OUT.write_text(json.dumps(self.result, indent=1) + "\n")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        data = self.result or self.summary()
        write = terminalreporter.write_line
        terminalreporter.section("where the time went")
        write(f"wall time {data['wall_seconds']:.0f} s, {len(data['tests'])} tests (all of it: {OUT})")
        write("the ten slowest tests (setup + call + teardown):")
        for nodeid, phases in list(data["tests"].items())[:10]:
            write(f"  {sum(phases.values()):7.1f} s  {nodeid}")
        write("the fixtures whose setups cost most (setups, scope):")
        for name, f in list(data["fixtures"].items())[:10]:
            write(f"  {f['seconds']:7.1f} s  {name} ({f['setups']}x, {f['scope']})")
