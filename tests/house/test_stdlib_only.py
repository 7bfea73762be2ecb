"""The kit's modules that the engine's python imports (through deploy/models/scripts/alert_corpus):
standard library only, so the toy's training shares the kit's logic instead of copying it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "deploy" / "models" / "scripts"
# The kit's modules the corpus imports, and the packages they sit in (imported first).
SHARED = {
    "app": "app/__init__.py",
    "app.alerts": "app/alerts/__init__.py",
    "app.alerts.records": "app/alerts/records.py",
    "app.gateway": "app/gateway/__init__.py",
    "app.gateway.decisions": "app/gateway/decisions/__init__.py",
    "app.gateway.decisions.orders": "app/gateway/decisions/orders.py",
    "evals": "evals/__init__.py",
    "evals.alerts.gofmt": "evals/alerts/gofmt.py",
}


def _corpus_files() -> list[Path]:
    package = SCRIPTS / "alert_corpus"
    return sorted(package.rglob("*.py")) if package.is_dir() else [SCRIPTS / "alert_corpus.py"]


def _outside(path: Path) -> set[str]:
    """Absolute imports of a file that are neither the standard library nor a SHARED module."""
    found = set()
    tree = ast.parse(path.read_text())
    # Imports under `if TYPE_CHECKING:` are for the type checker alone: they never run.
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for n in ast.walk(block)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {m for m in found if m.split(".")[0] not in sys.stdlib_module_names and m not in SHARED}


@pytest.mark.parametrize("path", [*(ROOT / p for p in SHARED.values()), *_corpus_files()], ids=str)
def test_the_shared_modules_and_the_corpus_import_only_the_standard_library(path: Path) -> None:
    assert not _outside(path), f"{path.relative_to(ROOT)} imports {_outside(path)}"


def test_the_corpus_runs_without_site_packages() -> None:
    """As the engine's python runs it, with nothing installed: the kit's checkout on sys.path."""
    code = (
        "import itertools, sys\n"
        f"sys.path[:0] = [{str(SCRIPTS)!r}, {str(ROOT)!r}]\n"
        "import alert_corpus as c\n"
        "assert len(c.examples('dev', 30)) == 30 and len(c.sdk_examples('dev', 10)) == 10\n"
        "policy = c.policy_questions(c.POLICY)\n"
        "assert len(list(itertools.islice(c.train_stream(0, policy), 200))) == 200\n"
        "kit = sorted(m for m in sys.modules if m.split('.')[0] in ('app', 'deploy', 'evals', 'loadtest'))\n"
        "print(' '.join(kit))\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) <= set(SHARED) | {"evals.alerts"}, done.stdout
