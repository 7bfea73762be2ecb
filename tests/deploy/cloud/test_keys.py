"""`dgemma keys add|list|rotate|revoke` against the recording gcloud stand-in
(devtools/harness/fakecloud.py): the real CLI in a subprocess, the project's secret as the
stand-in keeps it. The commands' syntax is checked against the real gcloud in
test_deploy_commands.py."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.deploy import PROJECT, REGION, Cloud

pytestmark = pytest.mark.integration
SECRET = "dgemma-api-keys"
KEYS = ["alpha-key-0000000000000000000000000000000", "bravo-key-1111111111111111111111111111111"]


def _id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def _cloud(tmp_path: Path, keys: list[str], *, router: bool = False) -> Cloud:
    """A project whose key secret holds `keys` as its one version; nothing listens anywhere."""
    cloud = Cloud(tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:9", tmp_path / "no-checkpoint")
    router_state = {"image": "router@sha256:0", "traffic": [["dgemma-router-1", 100, ""]]}
    cloud.set(secrets={SECRET: ["\n".join(keys) + "\n"]}, router=router_state if router else None)
    return cloud


def _settled(cloud: Cloud) -> None:
    """Every version of the key secret added long ago: every reader has read the newest."""
    cloud.set(created={})


def _latest(cloud: Cloud) -> list[str]:
    latest: str = cloud.state["secrets"][SECRET][-1]
    return latest.split()


def test_list_names_each_key_without_showing_it(tmp_path: Path) -> None:
    cloud = _cloud(tmp_path, [*KEYS, KEYS[0]])  # a key twice is one key
    done = cloud.dgemma("keys", "list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [[_id(k), k[:4] + "..."] for k in KEYS]
    assert "alert router" in lines[0] and "alert router" not in lines[1]
    assert not any(k[:8] in done.stdout + done.stderr for k in KEYS)


def test_revoke_writes_the_other_keys_and_disables_the_older_versions(tmp_path: Path) -> None:
    cloud = _cloud(tmp_path, KEYS)
    done = cloud.dgemma("keys", "add")
    assert done.returncode == 0, done.stderr
    added = done.stdout.strip()
    assert _latest(cloud) == [*KEYS, added]
    done = cloud.dgemma("keys", "revoke", _id(KEYS[1]))  # never the router's: at once
    assert done.returncode == 0, done.stderr
    assert _latest(cloud) == [KEYS[0], added] and f"revoked {_id(KEYS[1])}" in done.stderr
    assert sorted(cloud.state["disabled"][SECRET]) == [1, 2]  # both versions that held it
    assert KEYS[1] not in done.stdout + done.stderr
    # A longer prefix of the digest names the key too; the first key goes when no router runs.
    assert cloud.dgemma("keys", "revoke", hashlib.sha256(KEYS[0].encode()).hexdigest()).returncode == 0
    assert _latest(cloud) == [added] and sorted(cloud.state["disabled"][SECRET]) == [1, 2, 3]


def test_rotate_gives_the_router_a_new_key_then_the_old_one_can_go(tmp_path: Path) -> None:
    """The router sends the first key: `rotate` puts a new one first (never shown), the old one stays
    until revoked; the revoke waits until every reader can have read the new version (the router
    tries the old key on a 401 meanwhile: tests/jev/test_jev_client.py), then the old first key goes
    though the router runs."""
    cloud = _cloud(tmp_path, KEYS, router=True)
    assert cloud.dgemma("keys", "revoke", _id(KEYS[0])).returncode == 2  # the router's, not yet rotated
    done = cloud.dgemma("keys", "rotate")
    assert done.returncode == 0, done.stderr
    new, *rest = _latest(cloud)
    assert rest == KEYS and new not in done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"new key is {_id(new)}" in said and f"dgemma keys revoke {_id(KEYS[0])}" in said
    early = cloud.dgemma("keys", "revoke", _id(KEYS[0]))
    assert early.returncode == 2 and "until the rotation" in early.stderr and "revoke in" in early.stderr
    _settled(cloud)
    done = cloud.dgemma("keys", "revoke", _id(KEYS[0]))
    assert done.returncode == 0, done.stderr
    assert _latest(cloud) == [new, KEYS[1]]


@pytest.mark.parametrize(
    ("keys", "router", "given", "says"),
    [
        (KEYS, False, "0123abcd", "names no key"),
        (KEYS, False, KEYS[0], "not a key ID"),  # the key itself, pasted: never echoed
        (KEYS, False, "xyz", "not a key ID"),
        (KEYS, False, _id(KEYS[0])[:5], "not a key ID"),  # too short to be safe
        ([KEYS[0]], False, _id(KEYS[0]), "names the last key"),
        (KEYS, True, _id(KEYS[0]), "dgemma keys rotate"),
    ],
)
def test_revoke_refuses(tmp_path: Path, keys: list[str], router: bool, given: str, says: str) -> None:
    cloud = _cloud(tmp_path, keys, router=router)
    done = cloud.dgemma("keys", "revoke", given)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not any(k[:8] in done.stderr for k in keys)
    assert len(cloud.state["secrets"][SECRET]) == 1 and not cloud.state.get("disabled")


def test_revoke_refuses_an_id_that_names_two_keys(tmp_path: Path) -> None:
    # Two keys whose digests start with the same 6 hex digits (a birthday search: ~5000 tries).
    seen: dict[str, str] = {}
    for n in range(1_000_000):
        key = f"k{n}"
        prefix = hashlib.sha256(key.encode()).hexdigest()[:6]
        if prefix in seen:
            break
        seen[prefix] = key
    cloud = _cloud(tmp_path, [seen[prefix], key])
    done = cloud.dgemma("keys", "revoke", prefix)
    assert done.returncode == 2 and "names 2 keys" in done.stderr, done.stderr
    assert len(cloud.state["secrets"][SECRET]) == 1


def test_a_secret_that_cannot_be_read_is_never_overwritten(tmp_path: Path) -> None:
    cloud = _cloud(tmp_path, KEYS)
    cloud.set(disabled={SECRET: [1]})  # the latest version exists but cannot be read
    for action in (["add"], ["revoke", _id(KEYS[1])]):
        done = cloud.dgemma("keys", *action)
        assert done.returncode == 1 and "could not be read" in done.stderr, done.stderr
    assert len(cloud.state["secrets"][SECRET]) == 1, "no version written from an empty read"


@pytest.mark.parametrize("action", [["list"], ["revoke", "0123abcd"], ["add"]])
def test_a_dry_run_prints_commands_and_no_key(tmp_path: Path, action: list[str]) -> None:
    cloud = _cloud(tmp_path, KEYS)
    done = cloud.dgemma("keys", *action, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "$ gcloud secrets versions access latest" in done.stderr
    assert not any(k[:4] in done.stdout + done.stderr for k in KEYS)
    assert not [c for c in cloud.state["calls"] if c[0] == "gcloud"], "a dry run calls nothing"
    if action[0] == "revoke":
        assert "$ gcloud secrets versions add dgemma-api-keys" in done.stderr
        assert "$ gcloud secrets versions disable '<each older version>'" in done.stderr


def test_keys_without_terraform_on_path_says_so_in_one_line(tmp_path: Path) -> None:
    """gcloud is there, terraform is not (the names are checked by the module's own validations, which
    Terraform evaluates): one line, exit 2, no call."""
    cloud = _cloud(tmp_path, KEYS)
    gcloud_only = tmp_path / "gcloud-only"
    gcloud_only.mkdir()
    (gcloud_only / "gcloud").symlink_to(cloud.bin / "gcloud")
    done = cloud.dgemma("keys", "list", PATH=f"{gcloud_only}:/usr/bin:/bin")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "`dgemma keys` needs `terraform` on PATH" in done.stderr and cloud.state["calls"] == []


def test_keys_list_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    """`dgemma keys list | head -1`: the reader has gone when the keys are written. No traceback, no
    line; exit 1, as Python's own handling of a closed pipe."""
    cloud = _cloud(tmp_path, [f"key-{n:02d}-" + "x" * 40 for n in range(40)])
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line, as `head -1` soon after it
    argv = [sys.executable, "-m", "deploy.cli", "keys", "list", "--project", PROJECT, "--region", REGION]
    argv += ["--workdir", str(cloud.work)]
    try:
        done = subprocess.run(
            argv, env=cloud.env, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(write)
    assert done.returncode == 1 and done.stderr.strip() == "", done.stderr
    head = subprocess.run(
        f"{shlex.join(argv)} | head -1",
        shell=True, env=cloud.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert len(head.stdout.splitlines()) == 1 and "Traceback" not in head.stderr, head.stderr
