"""The trained toy model: training is reproducible, the training forward reads exactly what the real
engine reads, and `dgemma eval` scores it through the gateway (debias order-invariant by design)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.gateway.decisions.calibration import scaled
from app.gateway.decisions.calibration_file import Calibration
from app.gateway.main import create_app
from app.jev.wire import ReadPolicy
from deploy.devstack.stack import TOY_MODEL
from deploy.devstack.stack import toy_task as toy_task_module
from deploy.models import TOY_DIR
from deploy.runtime.settings import EngineSettings
from devtools.stack import LocalStack, local_stack
from tests.helpers.gateway import answer_probs, gateway_settings, serving

pytestmark = [pytest.mark.integration, pytest.mark.engine]
ROOT = Path(__file__).resolve().parents[2]
TOY_TEST = ROOT / "evals/data/toy-alerts-test.jsonl"
toy_task = toy_task_module()


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """`make dev` as a user gets it: the stack on the shipped toy model."""
    try:
        with local_stack(tmp_path_factory.mktemp("toy") / "engine.log") as running:
            yield running
    except RuntimeError as e:
        pytest.fail(str(e))


def _engine_python() -> str:
    return str(EngineSettings().engine_python)


def _train(out: Path, seed: int) -> str:
    done = subprocess.run(
        [_engine_python(), str(ROOT / "deploy/models/scripts/train_toy.py"), str(out), "--steps", "3",
         "--batch", "4", "--dev", "0", "--log-every", "1", "--seed", str(seed), "--threads", "2"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return str(json.loads((out / "train_log.json").read_text())["weights_sha256"])


def test_retraining_a_few_steps_is_deterministic(tmp_path: Path) -> None:
    first, again, other = _train(tmp_path / "a", 0), _train(tmp_path / "b", 0), _train(tmp_path / "c", 1)
    assert first == again
    assert other != first  # the seed reaches the weights: the equality above is not vacuous
    log = json.loads((tmp_path / "a" / "train_log.json").read_text())
    assert [row["step"] for row in log["steps"]] == [1, 2, 3]
    for name in ("tokenizer.json", "config.json"):  # the tokenizer is trained too, from the seed
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_the_training_forward_reads_what_the_engine_reads(toy: LocalStack, tmp_path: Path) -> None:
    """The shipped weights through the training code, and through vLLM's native endpoint."""
    assert toy.served_model == TOY_MODEL
    rng = random.Random(7)
    reads = []
    for alert in toy_task.alerts("test", 4):
        teams, levels = list(toy_task.TEAMS), list(toy_task.LEVELS)
        rng.shuffle(teams)
        rng.shuffle(levels)
        reads += [
            (alert["state"], "choice", toy_task.INSTRUCTIONS["team"], teams),
            (alert["state"], "score", toy_task.INSTRUCTIONS["severity"], levels),
            (alert["state"], "noul", toy_task.INSTRUCTIONS["page"], ["yes", "no"]),
        ]
    spec = tmp_path / "reads.json"
    spec.write_text(json.dumps(reads))
    done = subprocess.run(
        [_engine_python(), str(ROOT / "tests/engine_scripts/toy_reads.py"), str(TOY_DIR), str(spec)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    trained = json.loads(done.stdout.strip().splitlines()[-1])
    for (state, kind, instructions, options), ours in zip(reads, trained, strict=True):
        if kind == "choice":
            question = {"type": "choice", "instructions": instructions, "criteria": dict.fromkeys(options)}
            keys = options
        elif kind == "score":
            question = {"type": "score", "instructions": instructions, "criteria": options}
            keys = [str(i) for i in range(len(options))]
        else:
            question = {"type": "noul", "instructions": instructions}
            keys = ["yes", "no"]
        r = httpx.post(
            f"{toy.engine_url}/v1/systemone",
            json={"model": TOY_MODEL, "state": state, "questions": {"q": question}},
            timeout=60,
        )
        r.raise_for_status()
        served = r.json()["answers"]["q"]["probabilities"]
        assert [served[k] for k in keys] == pytest.approx(ours, abs=1e-4), (state, kind, options)


def test_eval_scores_the_toy_through_the_gateway(toy: LocalStack, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "eval", "--data", str(ROOT / "evals/data/toy-alerts-test.jsonl"),
         "--url", toy.url, "--limit", "12", "--policy", "single", "--policy", "debias", "--out", str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "eval.json").read_text())
    assert report["model"] == TOY_MODEL and report["items"] == 12
    rows = {(r["policy"], r["question"]): r for r in report["rows"]}
    assert set(rows) == {(p, q) for p in ("single", "debias") for q in ("team", "severity", "page")}
    for (policy, question), row in rows.items():
        assert row["items"] == 12
        assert row["reads"] == (1 if policy == "single" else 3)
        assert sum(b["count"] for b in row["bins"]) == 12
        assert (row["flip_rate"] is None) == (question == "page")
    # Debias reads the same option sequences whatever order the request brought: no answer flips.
    assert rows[("debias", "team")]["flip_rate"] == 0 and rows[("debias", "severity")]["flip_rate"] == 0
    assert rows[("debias", "team")]["accuracy"] == rows[("debias", "team")]["accuracy_reversed"]
    assert (out / "reliability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "team (choice)" in done.stdout


def test_calibrate_fits_the_toy_and_a_gateway_serves_the_file(toy: LocalStack, tmp_path: Path) -> None:
    """`dgemma calibrate` on the real engine, then a gateway of the same code serving its file over the
    same engine: the served probabilities are the raw ones at the fitted temperatures."""
    out = tmp_path / "calibration.json"
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "calibrate", "--data", str(TOY_TEST),
         "--url", toy.url, "--limit", "40", "--policy", "single", "--min-samples", "15", "--out", str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    single = ReadPolicy(mode="single")
    cal = Calibration.load(out, served_model=TOY_MODEL, read_policy=single)
    assert cal.data["items"] == 40 and set(cal.by_type) == {"noul", "choice", "score"}
    for row in cal.test:  # measured on the test split only, answers unchanged by scaling
        assert row["test"] == cal.data["test_items"]
        assert row["before"]["accuracy"] == row["after"]["accuracy"]  # type: ignore[index]
    items = [json.loads(line)["request"] for line in TOY_TEST.open()][:4]
    settings = {"engine_url": toy.engine_url, "served_model": TOY_MODEL, "mode": "single"}
    with (
        serving(create_app(gateway_settings(**settings))) as raw,
        serving(create_app(gateway_settings(**settings, calibration_file=out))) as calibrated,
    ):
        for request in items:
            body = {**request, "model": TOY_MODEL}
            before = httpx.post(f"{raw}/v1/systemone", json=body, timeout=120).json()
            after = httpx.post(f"{calibrated}/v1/systemone", json=body, timeout=120).json()
            for name, answer in after["answers"].items():
                kind = answer["type"]
                t = cal.temperature(name, kind)
                assert t is not None and after["diagnostics"][name]["temperature"] == t
                assert answer_probs(answer) == pytest.approx(
                    scaled(answer_probs(before["answers"][name]), t), abs=1e-6
                )


def test_eval_refuses_bad_data_before_asking(toy: LocalStack, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"request": {"state": "x", "questions": {"q": {"type": "noul"}}}, "expected": {"q": 1}})
    )
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "eval", "--data", str(bad), "--url", toy.url],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert "eval data: line 1: expected.q: a noul's expected answer is true or false" in done.stderr


def test_the_toy_says_what_it_is(toy: LocalStack) -> None:
    models = httpx.get(f"{toy.url}/v1/models", headers={"Authorization": "Bearer any"}, timeout=30).json()
    first = models["models"][0]
    assert first["name"] == TOY_MODEL
    assert (
        "not DiffusionGemma" in first["description"] and "synthetic alert-triage task" in first["description"]
    )
