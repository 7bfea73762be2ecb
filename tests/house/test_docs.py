"""The docs hold together: every relative link of the README, the CHANGELOG and docs/ reaches a file
(and a heading, when it names one), the code's docstrings and comments name files and modules that
exist, and the README stays a front door."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", path.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_reaches_a_file_and_its_heading() -> None:
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            if not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


# The code whose docstrings and comments are read, and the repository's folders a path may start with.
CODE = ("app", "deploy", "evals", "loadtest", "devtools", "scripts", "tests", "examples")
FOLDERS = (*CODE, "docs", "terraform", "requirements")
PACKAGES = CODE
REPO_PATH = re.compile(rf"(?<![\w./$~-])((?:{'|'.join(FOLDERS)})/[\w./*-]*\w)")
# A dotted name from a package of the kit, not followed by more of a name, a path or a host name.
MODULE = re.compile(rf"(?<![\w./$~-])((?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+)(?![\w/-]|\.\w)")
FILE_SUFFIXES = {"py", "md", "log", "json", "toml", "txt", "yaml", "sh", "png"}  # `deploy.log`: a file
NOT_MODULES = ("app.state",)  # FastAPI's `app.state`, not a module of app/


def _texts(path: Path) -> list[tuple[int, str]]:
    """A module's, its classes' and its functions' docstrings, and its comments, with their lines."""
    source = path.read_text()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, doc))
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    found += [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    return found


def _defines(module: Path, name: str) -> bool:
    """Whether a module binds `name` at its top level (a function, a class, an assignment, an import)."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def stale_names(text: str, root: Path = ROOT) -> list[str]:
    """The repository paths (`deploy/cloud/rollout.py`, `docs/deploy.md`, globs too) and dotted modules
    (`deploy.cloud.rollout`, or one of its top-level names: `deploy.cloud.rollout.Rollout`) that `text`
    names and `root` lacks."""
    paths = REPO_PATH.findall(text)
    stale = [p for p in paths if not (any(root.glob(p)) if "*" in p else (root / p).exists())]
    for name in MODULE.findall(text):
        parts = name.split(".")
        if parts[-1] in FILE_SUFFIXES or name.startswith(NOT_MODULES):
            continue
        for n in range(len(parts), 1, -1):  # the longest prefix that is a module or a package
            base = root.joinpath(*parts[:n])
            module = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
            if module.exists():
                if n < len(parts) and not (base / parts[n]).exists() and not _defines(module, parts[n]):
                    stale.append(name)
                break
        else:
            stale.append(name)
    return stale


def test_stale_names_finds_a_path_a_module_and_a_name_that_are_not_there() -> None:
    there = """Reads deploy/cloud/rollout.py and docs/deploy.md with
    deploy/models/scripts/alert_corpus/data/*.toml through `deploy.cloud.rollout.Rollout`
    (app.kubernetes.io/name), `python -m devtools.bench`; writes `deploy.log` and app.state. See
    deploy.cloud.rollout."""
    assert stale_names(there) == []
    moved = [
        "deploy/weights.py",
        "docs/gpu-check-h200.md",
        "tests/x/*.py",
        "app.auth",
        "deploy.cloud.rollout.Nothing",
    ]
    assert stale_names(f"Reads {', '.join(moved)}.") == moved


def test_docstrings_and_comments_name_files_and_modules_that_exist() -> None:
    stale = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for folder in CODE
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, text in _texts(path)
        for name in stale_names(text)
    ]
    assert not stale, stale


def test_the_readme_is_a_front_door_that_names_every_room() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 180
    rooms = [p for p in (ROOT / "app").iterdir() if (p / "__init__.py").exists()]
    rooms += [p for p in (ROOT / "deploy").iterdir() if (p / "__init__.py").exists()]
    for room in rooms:
        assert f"`{room.relative_to(ROOT)}/`" in readme, f"the README's room map lacks {room.name}"


def test_docs_hold_reports_not_raw_archives() -> None:
    """Raw logs, traces and tarballs live outside the repository (each report's ARTIFACTS.md gives their
    digests and the commit that holds them); what a test rebuilds a report from is under tests/data/."""
    archives = {".gz", ".tgz", ".tar", ".zip", ".xz", ".zst", ".bz2"}
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*") if p.suffix in archives]
    assert not found, found
