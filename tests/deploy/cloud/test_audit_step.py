"""The image build's dependency audit (cloudbuild.yaml, step `audit`): first, gating, fails closed.

No vulnerability database is reachable here, so the step's own script runs with the real pip-audit
against a stand-in OSV service on loopback (pip-audit reads its OSV URL from PIP_AUDIT_OSV_URL) and a
stand-in `pip` (the step's install of the pinned pip-audit needs PyPI).
"""

from __future__ import annotations

import datetime
import json
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from app.core.net import free_port

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
EXCEPTIONS = "requirements/audit-exceptions.txt"
VULN_ID = re.compile(r"(GHSA(-[0-9a-z]{4}){3}|PYSEC-\d{4}-\d+|CVE-\d{4}-\d+|OSV-\d{4}-\d+)")


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = yaml.safe_load((ROOT / "cloudbuild.yaml").read_text())["steps"]
    return steps


def _audit() -> dict[str, Any]:
    return next(s for s in _steps() if s.get("id") == "audit")


def _script() -> str:
    """The step's shell script as Cloud Build hands it to bash: `$$` is its escape for `$`."""
    step = _audit()
    assert step["entrypoint"] == "bash" and step["args"][0] == "-c" and len(step["args"]) == 2
    raw: str = step["args"][1]
    # A lone `$` would be taken for a substitution (or refused) by Cloud Build, not left to bash.
    assert "$" not in raw.replace("$$", ""), "escape every shell `$` as `$$` in cloudbuild.yaml"
    return raw.replace("$$", "$")


def _commands(script: str) -> list[str]:
    """Logical lines (backslash continuations joined), blank lines dropped."""
    return [line.strip() for line in script.replace("\\\n", " ").splitlines() if line.strip()]


def _pinned(lock: str) -> set[tuple[str, str]]:
    return {
        (canonicalize_name(m.group(1)), m.group(2))
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", lock, re.MULTILINE)
    }


# -- wiring -------------------------------------------------------------------------------------------


def test_audit_runs_first_and_every_other_step_waits_for_it() -> None:
    steps = _steps()
    assert steps[0]["id"] == "audit"
    others = steps[1:]
    assert {s["id"] for s in others} >= {"build", "build-router"}
    for step in others:
        # waitFor '-' (start at once) or no audit in waitFor would build and push despite a finding.
        assert "audit" in step.get("waitFor", []) and "-" not in step["waitFor"], step["id"]


def test_audit_cannot_swallow_a_failure() -> None:
    step, script = _audit(), _script()
    assert "allowFailure" not in step and "allowExitCodes" not in step
    commands = _commands(script)
    assert commands[0] == "set -euo pipefail"
    for swallow in (r"\|\|\s*(true|:|exit 0)(?=[\s;]|$)", r";\s*(true|:)\s*$", r"set \+e", r"\|\s*tee\b"):
        assert not re.search(swallow, script, re.MULTILINE), swallow
    # pip-audit's exit status is the step's: it is the last command, not in a pipe or a condition.
    assert commands[-1].startswith("pip-audit ") and "|" not in commands[-1]


def test_audit_reads_every_requirements_file_the_dockerfile_installs() -> None:
    parser = DockerfileParser(path=str(ROOT / "Dockerfile"))
    copied: dict[str, str] = {}  # destination in the image -> file in this repository
    installed: set[str] = set()
    for ins in parser.structure:
        if ins["instruction"] == "COPY" and "requirements/" in ins["value"]:
            *sources, dest = ins["value"].split()
            copied.update((dest, src) for src in sources if src.startswith("requirements/"))
        if ins["instruction"] == "RUN":
            # What a RUN runs: its own text and the scripts of this repository it bind-mounts.
            mounts = [
                dict(kv.partition("=")[::2] for kv in m.split(","))
                for m in re.findall(r"--mount=(\S+)", ins["value"])
            ]
            files = {m["target"]: m["source"] for m in mounts if m.get("type") == "bind" and "from" not in m}
            copied.update((dest, src) for dest, src in files.items() if src.startswith("requirements/"))
            texts = [
                ins["value"],
                *((ROOT / src).read_text() for src in files.values() if src.endswith(".sh")),
            ]
            for text in texts:
                if "pip install" in text:
                    installed |= set(re.findall(r"(?:-r|--requirement)[ =](\S+)", text))
    assert installed, "the Dockerfile installs no requirements file: this test no longer sees how"
    needed = {copied.get(path, path) for path in installed}
    audited = set(re.findall(r"--requirement[ =](\S+)", _script()))
    assert needed <= audited, f"not audited: {sorted(needed - audited)}"
    assert all((ROOT / path).is_file() for path in audited)


def test_pip_audit_is_pinned_and_the_tests_run_a_matching_release() -> None:
    pin = re.search(r"\bpip install\b.*\bpip-audit==([\w.]+)\s", _script())
    assert pin is not None, "the step must install one exact pip-audit release"
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    spec = next(r.specifier for r in map(Requirement, extra["test"]) if r.name == "pip-audit")
    # The test extra's range holds the build's pin, and what these tests run is of that range.
    assert pin.group(1) in spec and version("pip-audit") in spec


# -- the exceptions file ------------------------------------------------------------------------------


def _exception_problems(text: str, today: datetime.date) -> list[str]:
    """What is wrong with each entry: `VULN-ID  # package: why; who, YYYY-MM-DD; review-by YYYY-MM-DD`."""
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        m = re.fullmatch(rf"{VULN_ID.pattern}\s+#\s*(?P<reason>\S.*)", entry)
        if m is None:
            problems.append(f"line {n}: not `VULN-ID  # reason`: {entry!r}")
            continue
        review = re.search(r"review-by (\d{4}-\d{2}-\d{2})\s*$", m["reason"])
        added = re.findall(r"\d{4}-\d{2}-\d{2}", m["reason"])
        if review is None or len(added) < 2:
            problems.append(f"line {n}: needs who and when, then `review-by YYYY-MM-DD` last")
        elif datetime.date.fromisoformat(review.group(1)) < today:
            problems.append(f"line {n}: past its review-by date: renew it or remove the exception")
    return problems


def test_the_exceptions_file_has_only_reasoned_current_entries() -> None:
    text = (ROOT / EXCEPTIONS).read_text()
    assert text.startswith("#"), "the header explains the format"
    assert _exception_problems(text, datetime.date.today()) == []


def test_the_exceptions_check_rejects_what_it_should() -> None:
    today = datetime.date(2026, 6, 1)
    good = (
        "# header\n\nGHSA-abcd-efgh-jkmp  # foo: never called here; ana, 2026-05-01; review-by 2026-09-01\n"
    )
    assert _exception_problems(good, today) == []
    bad = [
        "GHSA-abcd-efgh-jkmp",  # no reason
        "foo-1234  # not an id; ana, 2026-05-01; review-by 2026-09-01",
        "CVE-2026-1234  # why, but no who or when",
        "PYSEC-2026-12  # foo: why; ana, 2026-01-01; review-by 2026-05-31",  # expired
    ]
    problems = _exception_problems("\n".join(bad), today)
    assert [p.split(":")[0] for p in problems] == ["line 1", "line 2", "line 3", "line 4"]
    assert "past its review-by" in problems[3]


# -- the step's script, run: a stand-in OSV service and a stand-in pip ---------------------------------


@dataclass
class FakeOsv:
    """OSV's /v1/query on loopback: the vulnerabilities it knows, and the queries it was asked."""

    url: str = ""
    known: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # package -> OSV records
    queries: list[tuple[str, str]] = field(default_factory=list)


@pytest.fixture
def osv() -> Iterator[FakeOsv]:
    fake = FakeOsv()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            name, ver = query["package"]["name"], query["version"]
            assert query["package"]["ecosystem"] == "PyPI"
            fake.queries.append((name, ver))
            vulns = fake.known.get(name, [])
            body = json.dumps({"vulns": vulns} if vulns else {}).encode()  # OSV answers {} when clean
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1/query"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


def _record(package: str, ver: str, vuln_id: str, alias: str) -> dict[str, Any]:
    return {
        "id": vuln_id,
        "aliases": [alias],
        "summary": "a known vulnerability (test record)",
        "published": "2026-01-01T00:00:00Z",
        "affected": [
            {
                "package": {"name": package, "ecosystem": "PyPI"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": f"{ver}.1"}]}],
            }
        ],
    }


Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Cloud Build's /workspace as far as the step reads it: the real lock and exceptions file."""
    (tmp_path / "requirements").mkdir()
    for name in ("requirements/gateway.lock", EXCEPTIONS):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.fixture
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bin")


@pytest.fixture
def run_step(workspace: Path, osv: FakeOsv, stubs: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    pip_audit = Path(sys.executable).parent / "pip-audit"
    assert pip_audit.is_file(), "pip-audit is missing: pip install -e '.[test]'"
    home = tmp_path_factory.mktemp("home")

    def run(pip_exit: int = 0, osv_url: str | None = None) -> subprocess.CompletedProcess[str]:
        # The stand-in pip records what the step asks of it: the pinned install.
        (stubs / "pip").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{stubs}/pip-args"\nexit {pip_exit}\n')
        (stubs / "pip").chmod(0o755)
        env = dict(e.split("=", 1) for e in _audit().get("env", []))
        env |= {
            "PATH": f"{stubs}:{pip_audit.parent}:/usr/bin:/bin",
            "HOME": str(home),  # pip-audit's cache, not the developer's
            "XDG_CACHE_HOME": str(home / ".cache"),
            "LC_ALL": "C.UTF-8",
            "NO_PROXY": "*",  # loopback, never through a proxy of this machine's
            "PIP_AUDIT_OSV_URL": osv_url or osv.url,
        }
        bash = shutil.which("bash") or "/bin/bash"
        return subprocess.run(
            [bash, "-c", _script()], cwd=workspace, env=env, capture_output=True, text=True, timeout=180
        )

    return run


def _first_pinned(workspace: Path) -> tuple[str, str]:
    return min(_pinned((workspace / "requirements/gateway.lock").read_text()))


def test_a_clean_lock_passes_and_every_pin_is_audited(
    run_step: Run, osv: FakeOsv, workspace: Path, stubs: Path
) -> None:
    done = run_step()
    assert done.returncode == 0, done.stderr
    assert "No known vulnerabilities found" in done.stderr
    lock = _pinned((workspace / "requirements/gateway.lock").read_text())
    assert len(lock) > 20 and set(osv.queries) == lock  # each pin of the lock, as pinned
    pin = re.search(r"pip-audit==\S+", _script())
    assert pin is not None
    asked = (stubs / "pip-args").read_text().split()
    assert asked[0] == "install" and pin.group(0) in asked


def test_a_known_vulnerability_fails_the_build_naming_it(
    run_step: Run, osv: FakeOsv, workspace: Path
) -> None:
    package, ver = _first_pinned(workspace)
    osv.known[package] = [_record(package, ver, "GHSA-test-vuln-0001", "CVE-2026-99001")]
    done = run_step()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "GHSA-test-vuln-0001" in done.stdout and package in done.stdout
    assert "Found 1 known vulnerability" in done.stderr


@pytest.mark.parametrize("listed", ["GHSA-test-vuln-0001", "CVE-2026-99001"])
def test_a_listed_exception_passes_by_its_id_or_an_alias(
    run_step: Run, osv: FakeOsv, workspace: Path, listed: str
) -> None:
    package, ver = _first_pinned(workspace)
    osv.known[package] = [_record(package, ver, "GHSA-test-vuln-0001", "CVE-2026-99001")]
    exceptions = workspace / EXCEPTIONS
    # Comments and blank lines are skipped; the last line needs no newline.
    entry = f"  {listed}  # {package}: test; ana, 2026-01-01; review-by 2099-01-01"
    exceptions.write_text(exceptions.read_text() + f"\n# another comment\n\n{entry}")
    done = run_step()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No known vulnerabilities found, 1 ignored" in done.stderr


def test_an_exception_for_another_vulnerability_does_not_hide_this_one(
    run_step: Run, osv: FakeOsv, workspace: Path
) -> None:
    package, ver = _first_pinned(workspace)
    osv.known[package] = [_record(package, ver, "GHSA-test-vuln-0001", "CVE-2026-99001")]
    exceptions = workspace / EXCEPTIONS
    exceptions.write_text(f"GHSA-test-vuln-0002  # {package}: other; ana, 2026-01-01; review-by 2099-01-01\n")
    done = run_step()
    assert done.returncode == 1 and "GHSA-test-vuln-0001" in done.stdout


def test_an_unreachable_database_fails_the_build(run_step: Run, osv: FakeOsv) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1/query"  # a port nothing listens on
    done = run_step(osv_url=closed)
    assert done.returncode != 0 and osv.queries == []


def test_an_unhashed_requirement_fails_the_build(run_step: Run, osv: FakeOsv, workspace: Path) -> None:
    lock = workspace / "requirements/gateway.lock"
    lock.write_text(lock.read_text() + "six==1.17.0\n")  # pinned but not hashed: not the lock's contract
    done = run_step()
    assert done.returncode != 0 and "does not contain a hash" in done.stdout + done.stderr


def test_a_failed_install_of_pip_audit_stops_the_step(run_step: Run, osv: FakeOsv) -> None:
    done = run_step(pip_exit=1)
    assert done.returncode != 0 and osv.queries == []  # set -e: no audit, no pass


def test_a_requirement_it_cannot_audit_fails_the_build(run_step: Run, workspace: Path) -> None:
    lock = workspace / "requirements/gateway.lock"
    url = "six @ https://example.invalid/six-1.17.0.tar.gz --hash=sha256:" + "0" * 64
    lock.write_text(lock.read_text() + url + "\n")  # no version to look up: --strict stops, not skips
    done = run_step()
    assert done.returncode != 0 and "six" in done.stderr
