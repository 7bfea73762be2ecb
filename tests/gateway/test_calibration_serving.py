"""The gateway serving a calibration file, and `dgemma calibrate` writing one, over the scripted
engine: which answers are scaled, that re-read decisions see calibrated probabilities, the refusal
of a mismatched file at start, and the command's outputs. The stand-in's numbers mean nothing;
tests/deploy/models/test_toy_model.py calibrates the trained toy on the real engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.core.config import ConfigError
from app.gateway.decisions.calibration import scaled
from app.gateway.decisions.calibration_file import Calibration, Fit
from app.gateway.main import create_app
from app.jev.wire import ReadPolicy
from deploy.cli import main
from tests.helpers.gateway import AppFactory, ScriptedEngine, answer_probs, gateway_settings, serving

pytestmark = pytest.mark.inprocess

ROOT = Path(__file__).resolve().parents[2]
TOY_TEST = ROOT / "evals" / "data" / "toy-alerts-test.jsonl"
BODY: dict[str, Any] = {
    "model": "dgemma",
    "state": "disk 97% full on db-3",
    "questions": {
        "page": {"type": "noul", "instructions": "Page someone now?"},
        "team": {"type": "choice", "criteria": {"database": None, "network": None, "storage": None}},
        "owner": {"type": "choice", "criteria": {"alice": None, "bob": None}},
    },
}


def _write(path: Path, policy: ReadPolicy, **temperatures: float) -> Path:
    """A file with per-type temperatures (noul, choice) and maybe per-name ones (team=...)."""
    kinds = {"noul", "choice", "score"}

    def fit(kind: Any, t: float) -> Fit:
        return Fit(type=kind, temperature=t, samples=99, nll_before=1, nll_after=1)

    cal = Calibration(
        model="dgemma",
        read_policy=policy,
        by_name={k: fit("choice", t) for k, t in temperatures.items() if k not in kinds},
        by_type={k: fit(k, t) for k, t in temperatures.items() if k in kinds},
        data={"path": "test"},
    )
    path.write_text(cal.model_dump_json())
    return path


async def test_answers_read_under_the_files_policy_are_scaled_by_their_temperature(
    make_app: AppFactory, tmp_path: Path
) -> None:
    path = _write(tmp_path / "c.json", ReadPolicy(mode="single"), noul=2.0, choice=0.5, team=3.0)
    _, raw = make_app(mode="single")
    _, calibrated = make_app(mode="single", calibration_file=path)
    before = (await raw.post("/v1/systemone", json=BODY)).json()
    after = (await calibrated.post("/v1/systemone", json=BODY)).json()
    for name, t in (("page", 2.0), ("team", 3.0), ("owner", 0.5)):  # team: its own fit; owner: the type's
        assert answer_probs(after["answers"][name]) == pytest.approx(
            scaled(answer_probs(before["answers"][name]), t)
        )
        assert after["diagnostics"][name]["calibrated"] is True
        assert after["diagnostics"][name]["temperature"] == t
        assert before["diagnostics"][name]["calibrated"] is False
    team = after["answers"]["team"]
    assert team["choice"] == before["answers"]["team"]["choice"]  # scaling never changes an answer
    assert team["confidence"] == pytest.approx(
        team["probabilities"][team["choice"]] * after["diagnostics"]["team"]["label_mass"]
    )
    # Another read policy's answers were not fitted: they are served raw, and say so.
    other = {**BODY, "read_policy": {"mode": "debias"}}
    debiased = (await calibrated.post("/v1/systemone", json=other)).json()
    assert debiased["answers"] == (await raw.post("/v1/systemone", json=other)).json()["answers"]
    assert not any(d["calibrated"] for d in debiased["diagnostics"].values())


async def test_re_read_decisions_see_calibrated_probabilities(
    make_app: AppFactory, scripted: ScriptedEngine, tmp_path: Path
) -> None:
    """The stand-in's readings are near uniform, so `adaptive` re-reads every choice; sharpened by a
    low temperature, the same first readings are certain enough to stand alone."""
    policy = ReadPolicy(mode="adaptive", reread_entropy=0.5)
    path = _write(tmp_path / "c.json", policy, choice=0.05)
    body = {**BODY, "questions": {"team": BODY["questions"]["team"]}}
    _, raw = make_app(mode="adaptive", reread_entropy=0.5)
    _, calibrated = make_app(mode="adaptive", reread_entropy=0.5, calibration_file=path)
    first = (await raw.post("/v1/systemone", json=body)).json()["diagnostics"]["team"]
    second = (await calibrated.post("/v1/systemone", json=body)).json()["diagnostics"]["team"]
    assert first["first_read_entropy"] > 0.9 and first["reads"] == 3
    assert second["first_read_entropy"] < 0.5 and second["reads"] == 1
    assert scripted.reads == 4


def test_a_file_of_another_model_or_policy_stops_the_gateway_at_start(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.json", ReadPolicy(mode="debias"), noul=2.0)
    with pytest.raises(ConfigError, match="fitted under the read policy"):
        create_app(gateway_settings(calibration_file=path), engine=ScriptedEngine())
    with pytest.raises(ConfigError, match="this gateway serves 'other'"):
        create_app(gateway_settings(calibration_file=path, mode="debias", served_model="other"))
    # `dgemma serve` as an operator runs it: exit 2 and the reason, before it listens.
    env = {
        **os.environ, "DGEMMA_CALIBRATION_FILE": str(path), "DGEMMA_ALLOW_ANY_KEY": "true",
        "DGEMMA_PORT": "9",
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "serve"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "fitted under the read policy" in done.stderr and "this gateway's default is" in done.stderr


def test_dgemma_calibrate_writes_a_file_the_gateway_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cal" / "calibration.json"
    with serving(create_app(gateway_settings(), engine=ScriptedEngine())) as url:
        code = main(
            ["calibrate", "--data", str(TOY_TEST), "--url", url, "--out", str(out), "--limit", "80",
             "--policy", "single", "--min-samples", "30"]
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "under single: fitted on" in printed and "DGEMMA_CALIBRATION_FILE=" in printed
    cal = Calibration.load(out, served_model="dgemma", read_policy=ReadPolicy(mode="single"))
    assert cal.data["items"] == 80 and cal.data["dev_items"] + cal.data["test_items"] == 80  # type: ignore[operator]
    assert set(cal.by_type) == {"noul", "choice", "score"}
    assert set(cal.by_name) == {"team", "severity", "page"}  # ~40 dev answers each, above 30
    assert {row["question"] for row in cal.test} == {"team", "severity", "page"}
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    # Served by a gateway of that policy, it is applied.
    with serving(
        create_app(gateway_settings(mode="single", calibration_file=out), engine=ScriptedEngine())
    ) as url:
        again = tmp_path / "again.json"
        code = main(
            ["calibrate", "--data", str(TOY_TEST), "--url", url, "--out", str(again), "--limit", "10"]
        )
    assert code == 1 and not again.exists()
    assert "the service already applies a calibration file" in capsys.readouterr().err


def test_dgemma_calibrate_refuses_bad_arguments_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    assert main(["calibrate", "--data", str(TOY_TEST), "--url", "http://127.0.0.1:9", "--out", str(out),
                 "--dev-share", "1"]) == 2  # fmt: skip
    assert "--dev-share must be between 0 and 1" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"request": {"state": "x"}, "expected": {"q": True}}) + "\n")
    assert main(["calibrate", "--data", str(bad), "--url", "http://127.0.0.1:9", "--out", str(out)]) == 2
    assert "line 1: request.questions" in capsys.readouterr().err and not out.exists()
