"""Every deploy, rollback, destroy and keys command that README.md and docs/deploy.md give, run as
written against the stand-ins (devtools/harness/fakecloud.py, the GCS emulator): in dry run, or as the plan
it is. A flag renamed or a step that refuses what the docs say to type fails here."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers.deploy import Cloud

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
COMMAND = re.compile(r"^dgemma (deploy|rollback|destroy|keys) .*$", re.MULTILINE)


def _commands() -> list[tuple[str, str]]:
    """(where, the command as written, its comment dropped) for each doc's console blocks."""
    found = []
    for doc in ("README.md", "docs/deploy.md"):
        text = (ROOT / doc).read_text()
        for block in re.findall(r"```console\n(.*?)```", text, re.DOTALL):
            found += [(doc, m.group(0).split("  #")[0].strip()) for m in COMMAND.finditer(block)]
    return list(dict.fromkeys(found))


def test_the_docs_give_the_commands_this_test_runs() -> None:
    commands = [c for _, c in _commands()]
    assert any("--checkpoint" in c for c in commands) and any("--alerts-mode act" in c for c in commands)
    assert any(c.startswith("dgemma rollback") for c in commands) and any("--plan" in c for c in commands)


@pytest.mark.parametrize(("doc", "command"), _commands())
def test_each_documented_command_runs_against_the_stand_ins(cloud: Cloud, doc: str, command: str) -> None:
    words = shlex.split(command)[1:]
    for flag in ("--project", "--region"):  # the stand-ins' project and region (the harness gives them)
        at = words.index(flag)
        del words[at : at + 2]
    words = [str(cloud.checkpoint) if w.startswith("~/models/") else w for w in words]
    if "--plan" not in words and "--dry-run" not in words:
        words.append("--dry-run")
    elif "--plan" in words:
        words.append("--allow-dirty")  # the tests run from a checkout being worked on
    done = cloud.dgemma(*words)
    assert done.returncode == 0, f"{doc}: {command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
