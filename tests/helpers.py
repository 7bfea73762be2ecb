"""Shared test code: request builders, gateway settings for tests, a scripted stand-in of the
engine client, and real servers in a thread. Fixtures live in conftest.py and use these."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from app.core.polling import wait_until
from app.gateway.settings import GatewaySettings
from devtools.stack import free_port

SCRIPTED_MODEL = "scripted-stand-in"
ALERT_QUESTIONS: dict[str, Any] = {
    "page": {"type": "noul", "instructions": "Should on-call be paged?"},
    "team": {"type": "choice", "criteria": {"db": None, "network": None, "app": None}},
    "severity": {"type": "score", "criteria": ["low", "medium", "high"]},
}
NOUL: dict[str, Any] = {"p": {"type": "noul", "instructions": "Page?"}}
GatewayFactory = Callable[..., str]  # the `gateway_factory` fixture: settings overrides -> URL
AppFactory = Callable[..., tuple[Any, httpx.AsyncClient]]  # `make_app`: overrides -> (app, client)


def decision(
    questions: dict[str, Any], state: Any = "Disk usage at 97% on db-1", **extra: Any
) -> dict[str, Any]:
    return {"model": "jev-latest", "state": state, "questions": questions, **extra}


def gateway_settings(**overrides: Any) -> GatewaySettings:
    """Gateway settings for a test: any bearer token accepted unless the test sets keys."""
    values: dict[str, Any] = {"allow_any_key": True, "log_level": "WARNING", **overrides}
    return GatewaySettings(**values)


def answer_probs(answer: dict[str, Any]) -> list[float]:
    """A Jev answer's probabilities in its own order (a noul's as [yes, no])."""
    if answer["type"] == "noul":
        return [answer["noul"], 1 - answer["noul"]]
    return list(answer["probabilities"].values())


class ScriptedEngine:
    """A stand-in of `app.gateway.engine.EngineClient` for in-process tests of the gateway's own
    orchestration (plans, error contract, admission, cancellation). Its probabilities are a
    deterministic hash of the prompt: they mean nothing and prove nothing about answers.

    `hold` makes every call wait until it is set; `fail` is raised by every call; `calls` records
    each call's body; `in_flight`/`peak` count concurrent calls; `cancelled` counts cancellations.
    """

    model = SCRIPTED_MODEL

    def __init__(self, *, fail: Exception | None = None, delay_s: float = 0.0) -> None:
        self.fail = fail
        self.delay_s = delay_s
        self.hold: asyncio.Event | None = None
        self.calls: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak = 0
        self.cancelled = 0
        self.is_healthy = True
        self.called = asyncio.Event()  # set by the first call

    async def healthy(self) -> bool:
        return self.is_healthy

    async def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    async def aclose(self) -> None:
        pass

    async def systemone(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(body)
        self.called.set()
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.hold is not None:
                await self.hold.wait()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.fail is not None:
                raise self.fail
            return self._answer(body)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1

    @property
    def reads(self) -> int:
        return sum(len(b["questions"]) for b in self.calls)

    @staticmethod
    def _answer(body: dict[str, Any]) -> dict[str, Any]:
        state = str(body["state"])
        answers, diagnostics = {}, {}
        for name, q in body["questions"].items():
            if q["type"] == "noul":
                labels = ["yes", "no"]
            elif q["type"] == "score":
                labels = [str(i) for i in range(len(q["criteria"]))]
            else:
                labels = list(q["criteria"])
            weights = [
                1 + int(hashlib.sha256(f"{state}|{q}|{label}".encode()).hexdigest()[:4], 16) / 65536
                for label in labels
            ]
            probs = {label: w / sum(weights) for label, w in zip(labels, weights, strict=True)}
            answers[name] = {"type": q["type"], "probabilities": probs}
            diagnostics[name] = {"label_mass": 0.5}
        n = len(body["questions"])
        usage = {"input_tokens": n * (len(state) // 4 + 10), "output_tokens": n}
        return {"answers": answers, "diagnostics": diagnostics, "usage": usage}


class _ThreadedServer(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # the test process keeps its own handlers
        pass


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI app under a real uvicorn server in a thread, on a free port; yield its URL."""
    port = free_port()
    server = _ThreadedServer(uvicorn.Config(app, port=port, log_level="warning", log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        if not wait_until(lambda: server.started, 20, interval_s=0.05):
            raise RuntimeError("test server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def in_process(app: Any) -> httpx.AsyncClient:
    """An async client that calls the app in this process (no socket)."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://gateway",
        headers={"authorization": "Bearer test"},
        timeout=30,
    )


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


# -- Terraform: parsed files and the real CLI on what needs no provider ------------------------------

TERRAFORM = Path(__file__).resolve().parents[1] / "terraform"
TERRAFORM_ENV = {"TF_CLI_CONFIG_FILE": "/dev/null", "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}


def hcl(path: Path) -> dict[str, Any]:
    """A .tf file as python-hcl2 reads it: quotes stripped, blocks as lists of dicts."""
    import hcl2
    from hcl2 import SerializationOptions

    opts = SerializationOptions(strip_string_quotes=True, explicit_blocks=False, with_comments=False)
    with path.open() as f:
        parsed: dict[str, Any] = hcl2.load(f, serialization_options=opts)
    return parsed


def terraform_eval(
    workdir: Path, expressions: dict[str, str], variables: dict[str, Any]
) -> dict[str, Any] | str:
    """Evaluate expressions with the real `terraform` CLI, offline: the module's variables (their
    validation blocks included) and its provider-free locals are copied into `workdir`, which then needs
    no provider. The values by name, or Terraform's error text when a validation refuses the variables."""
    (workdir / "variables.tf").write_text((TERRAFORM / "variables.tf").read_text())
    locals_block = re.search(r"^locals \{.*?^\}", (TERRAFORM / "main.tf").read_text(), re.S | re.M)
    assert locals_block, "terraform/main.tf has no locals block"
    outputs = "".join(f'output "{name}" {{\n  value = {expr}\n}}\n' for name, expr in expressions.items())
    (workdir / "main.tf").write_text(locals_block.group(0) + "\n" + outputs)
    (workdir / "terraform.tfvars.json").write_text(json.dumps(variables))

    def tf(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **TERRAFORM_ENV}
        return subprocess.run(["terraform", *args], cwd=workdir, env=env, capture_output=True, text=True)

    assert tf("init", "-no-color").returncode == 0
    applied = tf("apply", "-no-color", "-auto-approve")
    if applied.returncode != 0:
        return applied.stderr
    return {name: o["value"] for name, o in json.loads(tf("output", "-json").stdout).items()}


# -- a fake Google Cloud project for `dgemma deploy` (devtools/fakecloud.py) ---------------------------

PROJECT, REGION = "my-gpu-project", "europe-west4"
WEIGHTS_BUCKET = f"{PROJECT}-dgemma-weights"
FAST_GATE = ["--profile", "cpu-smoke", "--latency-seconds", "2", "--throughput-seconds", "2"]


class Cloud:
    """A fake project (the gcloud/terraform stand-ins' state), and `dgemma` commands run against it."""

    def __init__(self, root: Path, service: str, gcs: str, checkpoint: Path, router: str = "") -> None:
        from devtools import fakecloud

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
        from devtools import fakecloud

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
