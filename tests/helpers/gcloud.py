"""The real gcloud CLI, offline: a throwaway configuration and no credentials, so a wrong flag exits 2
("unrecognized arguments") and a valid command stops at authentication (exit 1)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

AUTH_STOP = "You do not currently have an active account selected"
BATCH = Path(__file__).with_name("gcloud_batch.py")


def sdk_root() -> Path:
    """The installed SDK's folder (bin/gcloud's parent's parent, links followed)."""
    real = shutil.which("gcloud")
    assert real is not None, "needs the gcloud CLI"
    return Path(real).resolve().parents[1]


def _env(config: Path) -> dict[str, str]:
    return {"CLOUDSDK_CONFIG": str(config), "PATH": "/usr/bin:/bin", "HOME": str(config)}


def gcloud(args: list[str], config: Path) -> subprocess.CompletedProcess[str]:
    """One command through gcloud's own launcher."""
    return subprocess.run(
        [str(sdk_root() / "bin" / "gcloud"), *args],
        env=_env(config),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def gcloud_many(commands: list[list[str]], config: Path) -> list[subprocess.CompletedProcess[str]]:
    """Many commands in one gcloud process (the CLI tree built once, about 2 s, instead of once per
    command), each with its own exit status and output, as `gcloud(...)` would give them."""
    sdk = sdk_root()
    bundled = sdk / "platform" / "bundledpythonunix" / "bin" / "python3"  # as bin/gcloud picks it
    python = str(bundled) if bundled.exists() else "python3"
    done = subprocess.run(
        [python, str(BATCH), str(sdk)],
        env=_env(config),
        input=json.dumps(commands),
        capture_output=True,
        text=True,
        timeout=60 + 20 * len(commands),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [
        subprocess.CompletedProcess(["gcloud", *args], r["returncode"], r["stdout"], r["stderr"])
        for args, r in zip(commands, json.loads(done.stdout), strict=True)
    ]
