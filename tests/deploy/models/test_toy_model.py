"""The trained toy model: training is reproducible, the training forward reads exactly what the real
engine reads, and `dgemma eval` scores it through the gateway (debias order-invariant by design)."""

from __future__ import annotations

import json
import math
import os
import random
import shlex
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from app.alerts.formats import parse
from app.alerts.settings import DEFAULT_POLICY
from app.gateway.decisions.calibration import scaled
from app.gateway.decisions.calibration_file import Calibration
from app.gateway.main import create_app
from app.jev.wire import ReadPolicy
from deploy.devstack.stack import TOY_MODEL, script_module
from deploy.devstack.stack import toy_task as toy_task_module
from deploy.models import TOY_DIR
from deploy.runtime.settings import EngineSettings
from devtools.harness.local_stack import LocalStack, local_stack
from tests.helpers.gateway import answer_probs, gateway_settings, serving

pytestmark = [pytest.mark.integration, pytest.mark.engine]
ROOT = Path(__file__).resolve().parents[3]
TOY_TEST = ROOT / "evals/data/toy-alerts-test.jsonl"
toy_task = toy_task_module()
# The README's SDK example (examples/alert_triage.py): a dict state, a choice and a score without
# instructions.
SDK_STATE = {"alert": "DiskUsageHigh", "host": "db-1", "value": "97%", "for": "15m"}


def _alert_corpus() -> Any:
    return script_module("alert_corpus")


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """`make dev` as a user gets it: the stack on the shipped toy model (its router's audit file in
    the test's directory, not the checkout's .cache/dev/)."""
    root = tmp_path_factory.mktemp("toy")
    try:
        with local_stack(root / "engine.log", DGEMMA_ALERTS_AUDIT_FILE=str(root / "audit.jsonl")) as running:
            yield running
    except RuntimeError as e:
        pytest.fail(str(e))


def _audit(toy: LocalStack) -> list[dict[str, Any]]:
    path = toy.engine_log.parent / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _engine_python() -> str:
    return str(EngineSettings().engine_python)


def _train(out: Path, seed: int) -> None:
    done = subprocess.run(
        [_engine_python(), str(ROOT / "deploy/models/scripts/train_toy.py"), str(out), "--steps", "3",
         "--batch", "4", "--dev", "0", "--log-every", "1", "--seed", str(seed), "--threads", "2"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


# What float rounding can do to three steps of training. The reductions in the 2-thread run (MKL's
# products among them: torch.set_num_threads gives MKL the threads too, whatever MKL_NUM_THREADS
# says) may end in other last bits from one process to the next; about 1 CI run in 20 saved other
# bf16 bytes. A gradient that changes by rounding can at most turn an Adam step around: twice the
# steps' learning rates (train_toy's lr 3e-3, warmup 50, cosine over 3 steps: 1.95e-4 in all),
# doubled again for Adam's bias-corrected ratio, which may pass 1 after the first step. And the
# saved bf16 value may then round the other way: one bf16 step (8 bits of significand, 2**-7).
_LRS = [3e-3 * min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * s / 3)) for s in range(3)]
ROUNDING_ATOL = 4 * sum(_LRS)  # 7.8e-4
ROUNDING_RTOL = 2**-7


def _weights_apart(a: Path, b: Path) -> dict[str, Any]:
    """The two checkpoints' weights compared through the engine's python (torch.isclose's rule)."""
    done = subprocess.run(
        [_engine_python(), str(ROOT / "tests/engine_scripts/weights_apart.py"), str(a / "model.safetensors"),
         str(b / "model.safetensors"), str(ROUNDING_RTOL), str(ROUNDING_ATOL)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    apart: dict[str, Any] = json.loads(done.stdout)
    return apart


def test_retraining_a_few_steps_is_deterministic(tmp_path: Path) -> None:
    """The same seed and thread count give the same tokenizer and config bytes, and the same
    weights up to float rounding (not always the same bytes: see ROUNDING_ATOL)."""
    for run, seed in (("a", 0), ("b", 0), ("c", 1)):
        _train(tmp_path / run, seed)
    log = json.loads((tmp_path / "a" / "train_log.json").read_text())
    assert [row["step"] for row in log["steps"]] == [1, 2, 3]
    for name in ("tokenizer.json", "config.json"):  # the tokenizer is trained too, from the seed
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    same = _weights_apart(tmp_path / "a", tmp_path / "b")
    assert same["same_layout"] and same["outside"] == 0, same
    # The seed reaches the weights, far beyond rounding: the closeness above is not vacuous (the
    # norms' weights start at the same constants whatever the seed, hence most, not all).
    other = _weights_apart(tmp_path / "a", tmp_path / "c")
    assert other["same_layout"] and other["outside"] > other["elements"] // 2, other


def test_rank_gives_the_shipped_toys_catalogue_figures() -> None:
    """`train_toy.py rank`: the shipped toy's p(page) on the catalogue's dev rules without their
    severity label (evals/alerts/results/toy-sweep-catalogue/README.md: AUC 0.872, recall 0.71 with
    0.17 false pages at 0.4, accuracy 0.764)."""
    done = subprocess.run(
        [_engine_python(), str(ROOT / "deploy/models/scripts/train_toy.py"), "rank"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.splitlines()[-1])
    expected = {"accuracy": 0.7637, "auc": 0.872, "recall": 0.7121, "false_pages": 0.1653}
    assert figures == pytest.approx(expected, abs=0.005)


def _engine_question(
    kind: str, instructions: str | None, options: list[str], descriptions: list[str | None]
) -> tuple[dict[str, Any], list[str]]:
    """The question as the gateway sends it to vLLM, and the keys of its answer's probabilities."""
    question: dict[str, Any] = {"type": kind}
    if instructions is not None:
        question["instructions"] = instructions
    if kind == "choice":
        question["criteria"] = dict(zip(options, descriptions, strict=True))
        return question, options
    if kind == "score":
        question["criteria"] = options
        return question, [str(i) for i in range(len(options))]
    return question, ["yes", "no"]


def test_the_training_forward_reads_what_the_engine_reads(toy: LocalStack, tmp_path: Path) -> None:
    """The shipped weights through the training code, and through vLLM's native endpoint: the toy
    task's one-line states, the alert router's dict states with the default policy's questions (the
    team choice with its descriptions, the long page question), and the README's SDK example."""
    assert toy.served_model == TOY_MODEL
    rng = random.Random(7)
    reads: list[tuple[Any, str, str | None, list[str], list[str | None]]] = []
    for alert in toy_task.alerts("test", 4):
        teams, levels = list(toy_task.TEAMS), list(toy_task.LEVELS)
        rng.shuffle(teams)
        rng.shuffle(levels)
        reads += [
            (alert["state"], "choice", toy_task.INSTRUCTIONS["team"], teams, [None] * 3),
            (alert["state"], "score", toy_task.INSTRUCTIONS["severity"], levels, [None] * 3),
            (alert["state"], "noul", toy_task.INSTRUCTIONS["page"], ["yes", "no"], [None, None]),
        ]
    corpus = _alert_corpus()
    policy = corpus.policy_questions(DEFAULT_POLICY)
    for source in corpus.SOURCES:
        state = corpus.examples("test", 1, source)[0]["state"]
        reads += [
            (state, q.kind, q.instructions, list(q.options), list(q.descriptions)) for q in policy.values()
        ]
    team = policy["team"]  # a re-read's order: the descriptions travel with their options
    reads.append(
        (state, "choice", team.instructions, list(team.options)[::-1], list(team.descriptions)[::-1])
    )
    for q in corpus.SDK_QUESTIONS.values():
        reads.append((SDK_STATE, q.kind, q.instructions, list(q.options), list(q.descriptions)))
    spec = tmp_path / "reads.json"
    spec.write_text(json.dumps(reads))
    done = subprocess.run(
        [_engine_python(), str(ROOT / "tests/engine_scripts/toy_reads.py"), str(TOY_DIR), str(spec)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    trained = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(trained) == len(reads)
    for (state, kind, instructions, options, descriptions), ours in zip(reads, trained, strict=True):
        question, keys = _engine_question(kind, instructions, options, descriptions)
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
    assert "not DiffusionGemma" in first["description"] and "the toy's" in first["description"]


# -- the toy on the router's own inputs (what `make dev` shows a new user) ----------------------------

ALERT_SETS = ROOT / "evals/alerts"


def _alerts_eval(toy: LocalStack, data: Path, out: Path, *flags: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "alerts", "eval", str(data), "--gateway", toy.url,
         "--out", str(out), *flags],
        capture_output=True, text=True, timeout=1200, cwd=ROOT,
        env={**os.environ, "DGEMMA_ALERTS_GATEWAY_API_KEY": "test"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    recall, team, noise = report["page_recall"], report["team_accuracy"], report["noise"]["value"]
    print(f"{data.name} {' '.join(flags)}: page recall {recall}, team {team}, noise {noise}")
    return report


def test_the_toy_routes_a_sample_of_the_public_alert_set(toy: LocalStack, tmp_path: Path) -> None:
    """Every tenth alert built from awesome-prometheus-alerts (never trained on), end to end with
    the sender's severity removed: the model decides, not the floor (the floor pages every
    source-critical alert whatever the model says: tests/alerts/test_policy.py). The whole set's
    figures, which the README states, take ~10 min a run here: `dgemma alerts eval` on the file, by
    hand. The floor is the measured level, held; not the issue's targets (recall 0.9, team 0.8)."""
    lines = (ALERT_SETS / "awesome-prometheus-alerts.jsonl").read_text().splitlines()[::10]
    sample = tmp_path / "sample.jsonl"
    sample.write_text("\n".join(lines) + "\n")
    report = _alerts_eval(toy, sample, tmp_path / "eval", "--without-severity")
    assert report["alerts"] == 60 and report["severity_labels_removed"] == 60
    assert report["team_accuracy"]["value"] >= 0.8, report["team_accuracy"]  # 0.95 measured
    assert report["page_recall"]["value"] >= 0.45, report["page_recall"]  # 0.59 measured (old toy 0.22)
    assert report["actions"]["drop"] == 0


def test_the_dev_router_routes_hand_written_alerts_and_records_each(toy: LocalStack) -> None:
    """Realistic alerts written by hand, independently of the training generator, posted to the
    router of `make dev` as their senders post them: every one leaves an audit record, and they
    route sensibly."""
    lines = [json.loads(line) for line in (ALERT_SETS / "handwritten.jsonl").read_text().splitlines()]
    expected: dict[str, dict[str, Any]] = {}
    for line in lines:
        url = f"{toy.alerts_url}/v1/alerts/{line['source']}"
        r = httpx.post(url, json=line["payload"], timeout=120)
        assert r.status_code == 200, r.text
        alerts = parse(line["source"], line["payload"]).alerts
        expected |= {a.key: e for a, e in zip(alerts, line["expected"], strict=True)}
    records = {r["key"]: r for r in _audit(toy) if r["event"] == "decision" and r["key"] in expected}
    assert set(records) == set(expected)  # no firing alert without a record
    pages = [k for k, e in expected.items() if e["page"]]
    paged = [k for k in pages if records[k]["action"] == "page"]
    teams = sum(records[k]["team"] == e["team"] for k, e in expected.items())
    print(f"hand-written: {len(paged)}/{len(pages)} pages, team {teams}/{len(expected)}, actions "
          f"{sorted(r['action'] for r in records.values())}")  # fmt: skip
    assert len(paged) / len(pages) >= 0.9
    assert teams / len(expected) >= 0.8
    assert all(r["action"] != "drop" for r in records.values())  # the default policy never drops


def test_the_readme_examples_route_sensibly(toy: LocalStack) -> None:
    """The README's SDK example (the old toy said "team network"), and the shipped sample deliveries.
    Its p(page) (0.28 when measured) is printed, not held: paging it from its text is not learnt yet."""
    sdk = {"page": {"type": "noul", "instructions": "Should on-call be paged now?"},
           "team": {"type": "choice", "criteria": {"database": None, "network": None, "app": None}},
           "severity": {"type": "score", "criteria": ["low", "medium", "high"]}}  # fmt: skip
    r = httpx.post(f"{toy.url}/v1/systemone", json={"model": TOY_MODEL, "state": SDK_STATE, "questions": sdk},
                   headers={"authorization": "Bearer test"}, timeout=120)  # fmt: skip
    answers = r.json()["answers"]
    print(f"README example: p(page) {answers['page']['noul']:.2f}, team {answers['team']['choice']}")
    assert answers["team"]["choice"] == "database", answers
    # The README's router example, sent as written (the module's first delivery of the sample: later
    # ones are the same alerts again, duplicates), and the answer it shows.
    path, headers, sample, shown = _readme_curl(ROOT / "README.md", "/v1/alerts/")
    routed = httpx.post(f"{toy.alerts_url}{path}", content=json.dumps(sample), headers=headers, timeout=120)
    assert routed.status_code == 200, routed.text
    assert not _differences(shown, routed.json()), f"README.md's router example: {routed.text}"
    db1, db2 = (a for a in parse("alertmanager", sample).alerts)
    records = {r["key"]: r for r in _audit(toy) if r["event"] == "decision"}
    assert records[db1.key]["team"] == "database"
    assert records[db1.key]["action"] == "page"  # critical at the source: paged
    assert records[db2.key]["action"] in ("page", "ticket")  # a warning: never dropped


def test_the_sample_warning_on_a_database_host_goes_to_the_database_team(toy: LocalStack) -> None:
    """The shipped sample's second alert (DiskFull on db-2, 91 %, a description and a runbook, no
    summary): a disk on a database host is the database team's (toy 5b81e6e3 said application)."""
    sample = json.loads((ROOT / "tests/data/alerts/alertmanager_firing.json").read_text())
    _, db2 = parse("alertmanager", sample).alerts
    assert httpx.post(f"{toy.alerts_url}/v1/alerts/alertmanager", json=sample, timeout=120).status_code == 200
    records = {r["key"]: r for r in _audit(toy) if r["event"] == "decision"}
    print(f"db-2: team {records[db2.key]['team']} ({records[db2.key]['p_team']})")
    assert records[db2.key]["team"] == "database"


def _readme_curl(path: Path, route: str) -> tuple[str, dict[str, str], dict[str, Any], dict[str, Any]]:
    """The README's `curl ...ROUTE` example: its path, headers and body as sent (`-d @FILE`: the file,
    from the checkout's root), and the answer it shows (its `{...}` elisions read as null: not shown,
    not compared)."""
    lines = path.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("$ curl") and route in line)
    command, end = lines[start].removeprefix("$ "), start + 1
    while True:  # the command ends where its quotes close
        try:
            argv = shlex.split(command)
            break
        except ValueError:
            command, end = f"{command}\n{lines[end]}", end + 1
    shown_lines = []
    for line in lines[end:]:
        if line.startswith("```"):
            break
        shown_lines.append(line)
    shown = json.loads("\n".join(shown_lines).replace("{...}", "null"))
    url = next(a for a in argv if route in a)
    headers = dict(h.split(": ", 1) for h in (argv[n + 1] for n, a in enumerate(argv) if a == "-H"))
    data = argv[argv.index("-d") + 1]
    body = json.loads((ROOT / data[1:]).read_text() if data.startswith("@") else data)
    return urlsplit(url if "//" in url else f"http://{url}").path, headers, body, shown


def _differences(shown: Any, real: Any, where: str = "") -> list[str]:
    """Where the README's shown answer is not what the service returned: strings and integers equal,
    numbers to the digits shown (one unit of the last shown digit)."""
    if shown is None:
        return []
    if isinstance(shown, dict):
        if not isinstance(real, dict):
            return [f"{where}: shown an object, got {real!r}"]
        return [d for k, v in shown.items() for d in _differences(v, real.get(k), f"{where}.{k}")]
    if isinstance(shown, float):
        digits = -int(Decimal(repr(shown)).as_tuple().exponent)
        ok = isinstance(real, int | float) and abs(real - shown) <= 10**-digits
        return [] if ok else [f"{where}: shown {shown}, got {real!r}"]
    return [] if shown == real else [f"{where}: shown {shown!r}, got {real!r}"]


def test_the_readme_curl_example_shows_what_the_toy_answers(toy: LocalStack) -> None:
    """The README's "Calling it" request, parsed out of README.md and sent as written to `make dev`'s
    stack: every answer it shows is the toy's (numbers to the digits shown)."""
    path, headers, body, shown = _readme_curl(ROOT / "README.md", "/v1/systemone")
    r = httpx.post(f"{toy.url}{path}", content=json.dumps(body), headers=headers, timeout=120)
    assert r.status_code == 200, r.text
    real = r.json()
    assert not _differences(shown, real), (
        f"README.md's example differs from the toy's answer {json.dumps(real)}: {_differences(shown, real)}"
    )
