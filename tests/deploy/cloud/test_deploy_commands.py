"""Every gcloud command `dgemma deploy`, `rollback`, `destroy` and `keys` emit parses with the real gcloud CLI
(528): with a throwaway configuration and no credentials, a wrong flag exits 2 ("unrecognized
arguments") while a valid command stops at authentication (exit 1) — so this proves the syntax
without reaching Google. The commands are the ones the stand-ins recorded in a full run."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from tests.helpers.deploy import REGION, Cloud
from tests.helpers.gcloud import AUTH_STOP, gcloud, gcloud_many

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("gcloud") is None, reason="needs the gcloud CLI"),
]


def test_the_real_gcloud_tells_a_wrong_flag_from_a_valid_command(tmp_path: Path) -> None:
    wrong = gcloud(["run", "deploy", "x", "--gpuu=1"], tmp_path)
    assert wrong.returncode == 2 and "unrecognized arguments" in wrong.stderr
    valid = gcloud(["run", "services", "describe", "x", "--project=p-123456", f"--region={REGION}"], tmp_path)
    assert valid.returncode == 1 and AUTH_STOP in valid.stderr
    # One gcloud process for many commands tells them apart alike, each with its own output.
    batch = gcloud_many([wrong.args[1:], valid.args[1:], wrong.args[1:]], tmp_path)
    assert [b.returncode for b in batch] == [2, 1, 2]
    assert "unrecognized arguments" in batch[0].stderr and AUTH_STOP not in batch[0].stderr
    assert AUTH_STOP in batch[1].stderr and "unrecognized" not in batch[1].stderr
    assert "unrecognized arguments" in batch[2].stderr


def test_every_emitted_gcloud_command_parses(cloud: Cloud, tmp_path: Path) -> None:
    first = cloud.deploy()
    assert first.returncode == 0
    assert cloud.deploy(DGEMMA_ENGINE_CANVAS="40").returncode == 0  # the candidate path
    rolled = cloud.dgemma("rollback")  # the history beside the state, the revisions, the traffic
    assert rolled.returncode == 0, rolled.stderr[-2000:]
    keys = cloud.dgemma("keys", "add")
    assert keys.returncode == 0 and len(keys.stdout.strip()) > 30, keys.stderr[-2000:]
    listed = cloud.dgemma("keys", "list")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 2, listed.stderr[-2000:]
    revoked = cloud.dgemma("keys", "revoke", listed.stdout.splitlines()[1].split()[0])
    assert revoked.returncode == 0, revoked.stderr[-2000:]
    old = cloud.dgemma("keys", "list").stdout.split()[0]
    assert cloud.dgemma("keys", "rotate").returncode == 0  # the router's new key first
    early = cloud.dgemma("keys", "revoke", old)  # refused: it reads the version before the newest
    assert early.returncode == 2 and "until the rotation" in early.stderr, early.stderr[-2000:]
    destroy = cloud.dgemma("destroy", "--delete-weights", "--yes")
    assert destroy.returncode == 0, destroy.stderr[-2000:]
    emitted = [call[1:] for call in cloud.state["calls"] if call[0] == "gcloud"]
    shapes: dict[str, list[str]] = {}
    for args in emitted:  # one of each command (its first words and its flags' names), as given
        flags = sorted({a.split("=")[0] for a in args if a.startswith("-")})
        shapes.setdefault(" ".join([*(a for a in args[:3] if not a.startswith("-")), *flags]), args)
    assert len(shapes) >= 12, sorted(shapes)
    # And the commands the deploy prints for the operator (how to read each sender's token).
    printed = [line.split("token: ", 1)[1] for line in first.stdout.splitlines() if "token: gcloud " in line]
    assert len(printed) == 3
    for command in printed:
        shapes[f"printed: {command}"] = shlex.split(command)[1:]
    names = sorted(shapes)
    for name, done in zip(names, gcloud_many([shapes[n] for n in names], tmp_path / "gcloud"), strict=True):
        assert done.returncode != 2, f"gcloud {name}: {done.stderr[-800:]}"
        assert done.returncode == 0 or AUTH_STOP in done.stderr, f"gcloud {name}: {done.stderr[-800:]}"
