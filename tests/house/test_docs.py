"""The docs hold together: every relative link of the README, the CHANGELOG and docs/ reaches a file
(and a heading, when it names one), and the README stays a front door."""

from __future__ import annotations

import re
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


def test_the_readme_is_a_front_door_that_names_every_room() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 180
    rooms = [p for p in (ROOT / "app").iterdir() if (p / "__init__.py").exists()]
    rooms += [p for p in (ROOT / "deploy").iterdir() if (p / "__init__.py").exists()]
    for room in rooms:
        assert f"`{room.relative_to(ROOT)}/`" in readme, f"the README's room map lacks {room.name}"
