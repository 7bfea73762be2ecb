"""The house rules, read from the code: who imports whom, no SystemExit in library code, tests that
share code through helpers, harnesses kept out of the installed package and the image, and
devtools/ as three rooms over its harness."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    """Top-level names of every absolute import in a file, function-level ones included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


ENGINE_SCRIPTS = ("deploy/models/scripts", "deploy/devstack/engine")  # run by the engine's python


def _files(room: str) -> list[Path]:
    return [
        p for p in (ROOT / room).rglob("*.py")
        if not any(p.is_relative_to(ROOT / scripts) for scripts in ENGINE_SCRIPTS)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("room", "forbidden"),
    [
        ("app", {"deploy", "loadtest", "evals", "devtools", "tests", "vllm", "torch"}),  # the bottom room
        ("loadtest", {"deploy", "devtools", "tests", "evals"}),  # a leaf library: URLs in, numbers out
        ("evals", {"deploy", "devtools", "tests", "loadtest"}),  # a leaf too: labelled data in, figures out
        ("deploy", {"devtools", "tests"}),  # what the image installs
    ],
)
def test_rooms_import_only_downward(room: str, forbidden: set[str]) -> None:
    for path in _files(room):
        assert not _imports(path) & forbidden, (
            f"{path.relative_to(ROOT)} imports {_imports(path) & forbidden}"
        )


def test_the_services_carry_no_offline_tools() -> None:
    """app/ is what the images serve: the router's eval and report live in evals/alerts/, their
    plots need matplotlib, and the router's image runs `alerts serve` without either."""
    for path in _files("app"):
        bad = _imports(path) & {"evals", "matplotlib"}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def _exits(path: Path) -> list[int]:
    """Lines that raise SystemExit or call sys.exit outside an `if __name__ == "__main__"` block."""
    tree = ast.parse(path.read_text())
    main_blocks = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    in_main = {id(sub) for block in main_blocks for sub in ast.walk(block)}
    lines = []
    for node in ast.walk(tree):
        if id(node) in in_main:
            continue
        if isinstance(node, ast.Raise) and node.exc is not None and "SystemExit" in ast.unparse(node.exc):
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "exit", "quit"):
            lines.append(node.lineno)
    return lines


def test_library_code_never_exits_the_process() -> None:
    for room in ("app", "loadtest", "evals", "deploy"):
        for path in _files(room):
            assert not _exits(path), f"{path.relative_to(ROOT)} exits at lines {_exits(path)}"


def test_tests_share_code_through_helpers_not_conftest() -> None:
    for path in (ROOT / "tests").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.endswith("conftest"), f"{path.relative_to(ROOT)} imports a conftest"
                assert not node.module.startswith("tests.fixtures"), (
                    f"{path.relative_to(ROOT)} imports fixtures"
                )


def test_tests_mirror_the_rooms() -> None:
    """A folder of tests per room of app/ and deploy/ (and the leaf libraries, and devtools/), none per
    tier."""
    rooms = {p.name for p in (ROOT / "tests").iterdir() if (p / "__init__.py").exists()}
    folders = {"core", "jev", "gateway", "alerts", "deploy", "evals", "loadtest", "terraform", "devtools"}
    assert folders <= rooms
    assert not rooms & {"unit", "app", "integration"}, "tiers are markers, not folders"


def test_deploy_tests_stay_cut_by_room() -> None:
    """tests/deploy/ holds a folder per room of deploy/ (`cli` for deploy/cli.py and its commands),
    and no test file directly under it."""
    tests = ROOT / "tests" / "deploy"
    loose = sorted(
        p.name for p in tests.iterdir() if p.is_file() and p.suffix == ".py" and p.name != "__init__.py"
    )
    assert not loose, f"tests/deploy/ holds {loose}: move each into the folder of its room"
    rooms = {p.name for p in (ROOT / "deploy").iterdir() if (p / "__init__.py").exists()} | {"cli"}
    folders = {p.name for p in tests.iterdir() if (p / "__init__.py").exists()}
    assert folders <= rooms, f"tests/deploy/ folders that are no room of deploy/: {sorted(folders - rooms)}"


def test_harnesses_stay_out_of_the_package_and_the_image() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(p.startswith(("devtools", "tests")) for p in packages)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"devtools", "tests"} <= set(ignored)
    copies = [line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("COPY")]
    assert not any("devtools" in line for line in copies)


def _kit_imports(path: Path) -> set[str]:
    """Full module names of every absolute import of the kit's own packages in a file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {m for m in found if m.split(".")[0] in ("app", "deploy", "evals", "loadtest")}


@pytest.mark.parametrize(
    ("room", "forbidden"),
    [
        # What runs in the GPU image at start: never the operator's deploy, model preparation,
        # the local stack, the GPU check, the CLI, or the gate.
        ("deploy/runtime", ("deploy.cloud", "deploy.models", "deploy.devstack", "deploy.gpucheck",
                            "deploy.commands", "deploy.cli", "loadtest", "evals")),
        ("deploy/models", ("deploy.cloud", "deploy.devstack", "deploy.gpucheck", "deploy.commands")),
        ("deploy/cloud", ("deploy.devstack", "deploy.gpucheck", "deploy.models", "deploy.commands")),
    ],
)  # fmt: skip
def test_deploy_rooms_import_only_what_runs_where_they_run(room: str, forbidden: tuple[str, ...]) -> None:
    for path in _files(room):
        bad = {m for m in _kit_imports(path) if m.startswith(forbidden)}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_a_command_imports_its_room_only_when_it_runs() -> None:
    for path in (ROOT / "deploy" / "commands").glob("*.py"):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        kit = {m for n in top for m in _kit_imports_of(n) if not m.startswith("deploy.commands")}
        assert not kit, f"{path.relative_to(ROOT)} imports {kit} when the CLI is built"


def _kit_imports_of(node: ast.Import | ast.ImportFrom) -> set[str]:
    names = {a.name for a in node.names} if isinstance(node, ast.Import) else {node.module or ""}
    return {m for m in names if m.split(".")[0] in ("app", "deploy", "evals", "loadtest")}


@pytest.mark.parametrize(
    ("room", "forbidden"),
    [
        ("app/core", ("app.jev", "app.gateway", "app.alerts")),  # what both services and the CLI share
        ("app/jev", ("app.gateway", "app.alerts")),  # the API a client and the server share
        ("app/gateway", ("app.alerts",)),  # the decision service never knows the router
        ("app/alerts", ("app.gateway",)),  # the router is a Jev client of it, over HTTP, like any other
    ],
)
def test_the_services_are_siblings_over_a_shared_core(room: str, forbidden: tuple[str, ...]) -> None:
    for path in _files(room):
        bad = {m for m in _kit_imports(path) if m.startswith(forbidden)}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def _devtools_imports(path: Path) -> set[str]:
    """Full module names of every absolute import of devtools in a file (`from devtools import lab`
    as `devtools.lab`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "devtools" else []
            found |= {node.module, *names}
    return {m for m in found if m.split(".")[0] == "devtools"}


@pytest.mark.parametrize(
    ("room", "forbidden"),
    [
        ("devtools/harness", ("devtools.bench", "devtools.lab")),  # the bottom: tests, bench and lab use it
        ("devtools/bench", ("devtools.lab",)),  # the benchmarks and the lab: siblings over the harness
        ("devtools/lab", ("devtools.bench",)),
    ],
)
def test_the_harness_imports_neither_bench_nor_lab(room: str, forbidden: tuple[str, ...]) -> None:
    for path in _files(room):
        bad = {m for m in _devtools_imports(path) if m.startswith(forbidden)}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_devtools_is_three_rooms_and_the_tests_mirror_them() -> None:
    """devtools/ holds its three rooms and at most 3 modules at its top (the package's own, and
    what every room shares: the markdown tables); tests/devtools/ has a folder per room only."""
    top = ROOT / "devtools"
    modules = sorted(p.name for p in top.glob("*.py"))
    assert len(modules) <= 3, f"devtools/ has {len(modules)} modules at its top: {modules}"
    rooms = {p.name for p in top.iterdir() if (p / "__init__.py").exists()}
    assert rooms == {"harness", "bench", "lab"}, sorted(rooms)
    folders = {p.name for p in (ROOT / "tests" / "devtools").iterdir() if (p / "__init__.py").exists()}
    assert folders <= rooms, f"tests/devtools/ folders that are no room: {sorted(folders - rooms)}"


def test_the_routers_command_loads_no_other_room() -> None:
    """`dgemma alerts serve` in the router image: parsing it loads no other command's room."""
    code = (
        "import sys\n"
        "from deploy.cli import build_parser\n"
        "build_parser('alerts').parse_args(['alerts', 'serve'])\n"
        "kit = ('app', 'deploy', 'evals', 'loadtest')\n"
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in kit))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = set(done.stdout.split())
    rooms = {m for m in loaded if not m.startswith(("deploy.commands", "deploy.cli"))}
    assert rooms <= {"app", "app.core", "app.core.errors", "deploy"}, sorted(rooms)
