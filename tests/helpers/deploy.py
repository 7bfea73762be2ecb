"""Test code of the operator's tooling: a stand-in `nvidia-smi`, and a fake Google Cloud project for
`dgemma deploy` (devtools/harness/fakecloud.py) with the commands run against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def fake_nvidia_smi(directory: Any, name: str = "NVIDIA L4", mib: int = 23034) -> None:
    """A stand-in `nvidia-smi` (no GPU here) answering the one query the supervisor makes, as the real
    one does: `NAME, MEMORY_MIB` per GPU. Put `directory` first on PATH."""
    script = directory / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--query-gpu=name,memory.total*) '
        f'echo "{name}, {mib}";; *) echo "unexpected: $*" >&2; exit 2;; esac\n'
    )
    script.chmod(0o755)


PROJECT, REGION = "my-gpu-project", "europe-west4"


WEIGHTS_BUCKET = f"{PROJECT}-dgemma-weights"


# Short windows: the deploy's tests check the orchestration around the gate (tests/loadtest/ checks
# its figures). Each Locust run counts every request started before its end (its final figures,
# loadtest/locustfile.py), so a short window on a loaded machine still measures some.
FAST_GATE = ["--profile", "cpu-smoke", "--latency-seconds", "1", "--throughput-seconds", "2"]


class Cloud:
    """A fake project (the gcloud/terraform stand-ins' state), and `dgemma` commands run against it."""

    def __init__(self, root: Path, service: str, gcs: str, checkpoint: Path, router: str = "") -> None:
        from devtools.harness import fakecloud

        self.bin, self.state_path, self.work = root / "bin", root / "cloud.json", root / "work"
        self.env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}", "STORAGE_EMULATOR_HOST": gcs}
        self.checkpoint = checkpoint
        initial = {
            "service_url": service,
            "candidate_url": service,
            "router_url": router,  # where the alert router answers (its /readyz), if anywhere
            "buckets": {WEIGHTS_BUCKET: REGION.upper()},
        }
        fakecloud.install(self.bin, self.state_path, initial)

    @property
    def state(self) -> dict[str, Any]:
        from devtools.harness import fakecloud

        return fakecloud.load(self.state_path)

    def set(self, **changes: Any) -> None:
        self.state_path.write_text(json.dumps({**self.state, **changes}))

    def dgemma(self, *args: str, region: str = REGION, **env: str) -> subprocess.CompletedProcess[str]:
        common = ["--project", PROJECT, "--region", region, "--workdir", str(self.work)]
        argv = [sys.executable, "-m", "deploy.cli", *args, *common]
        # From a directory of its own: the deploy must work wherever the operator stands.
        return subprocess.run(
            argv, cwd=self.work.parent, env={**self.env, **env}, capture_output=True, text=True, timeout=300
        )

    def deploy(self, *extra: str, region: str = REGION, **env: str) -> subprocess.CompletedProcess[str]:
        flags = [
            "--checkpoint",
            str(self.checkpoint),
            "--allow-dirty",
            "--id-token",
            "off",
            "--warmup-seconds",
            "30",
        ]
        return self.dgemma("deploy", *flags, *FAST_GATE, *extra, region=region, **env)

    def calls(self, since: int = 0) -> list[str]:
        """The calls, as short names: `terraform apply`, `gcloud builds submit`, ..."""
        names = []
        for call in self.state["calls"][since:]:
            words = [w for w in call[1:] if not w.startswith("-")]
            names.append(" ".join([call[0], *words[:2]]))
        return names

    def versions(self, secret: str) -> list[str]:
        """The values added to a secret, oldest first."""
        versions: list[str] = self.state["secrets"][secret]
        return versions

    def traffic(self) -> list[list[Any]]:
        service = self.state["service"]
        assert service is not None
        traffic: list[list[Any]] = service["traffic"]
        return traffic


def graph_sizes(argv: list[str]) -> list[int]:
    """The CUDA-graph sizes an engine argv asks for (`--cudagraph-capture-sizes N N ...`)."""
    at = argv.index("--cudagraph-capture-sizes") + 1
    end = next((i for i in range(at, len(argv)) if not argv[i].isdigit()), len(argv))
    return [int(a) for a in argv[at:end]]
