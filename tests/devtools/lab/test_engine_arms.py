"""The engine arms' orchestration logic (devtools/lab/engine_arms.py): arms from the command line, an
arm's settings to the engine's argv, a level from vLLM's counters, and the report from results."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.core.config import ConfigError
from app.gateway.settings import GatewaySettings
from deploy.gpucheck.metrics import engine_counters
from deploy.gpucheck.record import Sample
from deploy.runtime.gpu_budget import BIG_CONFIG
from deploy.runtime.settings import SupervisorSettings
from deploy.runtime.supervisor import engine_command
from devtools.lab.engine_arms import (
    DEFAULT_ARMS,
    Arm,
    ArmRun,
    Level,
    Report,
    arm_means,
    arms_toml,
    build_parser,
    drift,
    load_arms,
    markdown,
    options,
    parse_arms,
    plot,
    ratios,
    summarize_level,
    write,
)
from tests.helpers.deploy import fake_nvidia_smi

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu"
DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_default_plan_is_todays_settings_against_vllms_defaults_twice() -> None:
    plan = parse_arms(list(DEFAULT_ARMS))
    assert [a.name for a in plan] == ["baseline", "vllm-defaults", "baseline"]
    assert plan[0] is plan[2] and plan[0].settings == {}
    assert plan[1].env() == {
        "DGEMMA_ENGINE_ASYNC_SCHEDULING": "true",
        "DGEMMA_ENGINE_MAX_CUDAGRAPH_CAPTURE_SIZE": "0",
        "DGEMMA_ENGINE_CUDAGRAPH_SIZES": "vllm",
        "DGEMMA_ENGINE_MULTIPROC_METHOD": "spawn",
    }
    assert plan[0].capture_size() == 2048 and plan[1].capture_size() == 512  # 0: vLLM's own cap


def test_an_arm_with_several_settings_and_a_repeat_by_name() -> None:
    spec = "both:engine_async_scheduling=false, engine_max_cudagraph_capture_size=1024"
    plan = parse_arms([spec, "baseline", "both", spec])
    assert [a.name for a in plan] == ["both", "baseline", "both", "both"]
    assert plan[0].settings == {
        "engine_async_scheduling": "false",
        "engine_max_cudagraph_capture_size": "1024",
    }


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["x:engine_no_such=1"], "'engine_no_such' is not an EngineSettings field"),
        (["x:engine_async_scheduling=perhaps"], "valid boolean"),
        (["x:engine_max_cudagraph_capture_size=-1"], "greater than or equal to 0"),
        (["x:engine_async_scheduling"], "is not FIELD=VALUE"),
        (["x:engine_async_scheduling=false", "x:engine_async_scheduling=true"], "different settings"),
        (["bad name"], "a name of letters"),
        ([], "no arms"),
    ],
)
def test_arms_that_are_refused(specs: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_arms(specs)


def test_the_command_line() -> None:
    args = build_parser().parse_args(
        ["/ckpt", "--clients", "8,32", "--seconds", "20", "--arm", "a", "--arm", "b:engine_max_num_seqs=64"]
    )
    opts = options(args)
    assert opts.clients == [8, 32] and opts.seconds == 20 and opts.latency_seconds == 30
    assert [a.name for a in opts.arms] == ["a", "b"] and opts.arms[1].env() == {
        "DGEMMA_ENGINE_MAX_NUM_SEQS": "64"
    }
    default = options(build_parser().parse_args(["/ckpt"]))
    assert [a.name for a in default.arms] == ["baseline", "vllm-defaults", "baseline"]
    assert default.overhead_rounds == 20 and not default.reuse_cache
    again = options(build_parser().parse_args(["/ckpt", "--reuse-cache", "--overhead-rounds", "0"]))
    assert again.reuse_cache and again.overhead_rounds == 0


def test_arms_from_a_toml_file_are_the_shorthands_arms(tmp_path: Path) -> None:
    path = tmp_path / "arms.toml"
    path.write_text(
        '[[arm]]\nname = "baseline"\n\n'
        '[[arm]]\nname = "both"\n'
        "fields = { engine_async_scheduling = false, engine_max_cudagraph_capture_size = 1024 }\n\n"
        '[[arm]]\nname = "two"\nfields = { engine_gpu = "h200" }\nreplicas = 2\n\n'
        '[[arm]]\nname = "baseline"\n'
    )
    arms = load_arms(path)
    assert arms == parse_arms(
        ["baseline", "both:engine_async_scheduling=false,engine_max_cudagraph_capture_size=1024",
         "two:engine_gpu=h200,replicas=2", "baseline"]
    )  # fmt: skip
    again = tmp_path / "again.toml"
    again.write_text(arms_toml(arms))  # what a run writes beside its report reads back as its arms
    assert load_arms(again) == arms
    opts = options(build_parser().parse_args(["/ckpt", "--arms", str(path)]))
    assert [a.name for a in opts.arms] == ["baseline", "both", "two", "baseline"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["/ckpt", "--arms", str(path), "--arm", "baseline"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[arm]\nname = "x"\n', "not TOML: "),
        ('[[arm]]\nname = "x"\nfields = { engine_no_such = 1 }\n', "arm 'x': 'engine_no_such' is not an"),
        (
            '[[arm]]\nname = "x"\nfield = { engine_max_num_seqs = 8 }\n',
            "arm 'x': unknown key 'field' (known: name, fields, replicas, env)",
        ),
        ("[[arm]]\nfields = { engine_max_num_seqs = 8 }\n", "arm 1: name: Field required"),
        ('[[arm]]\nname = "x"\nfields = { engine_async_scheduling = "perhaps" }\n', "valid boolean"),
        ('[[arm]]\nname = "x"\nfields = { engine_max_num_seqs = [8] }\n', "a string, a number or a boolean"),
        ('[[arm]]\nname = "x"\nreplicas = 9\n', "arm 'x': replicas: 9; 1 to 4"),
        ('[[arm]]\nname = "x"\nreplicas = "2"\n', "arm 'x': replicas: '2'; 1 to 4"),
        ('name = "x"\n', "unknown key 'name' (known: arm)"),
        ("", "no arms"),
    ],
)
def test_an_arms_file_that_is_refused_says_why_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "arms.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as refused:
        load_arms(path)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert str(refused.value).startswith(f"arms file {path}")
    with pytest.raises(ConfigError, match="No such file"):
        load_arms(tmp_path / "none.toml")


@pytest.mark.parametrize(
    "report", ["engine-arms-h200", "engine-sizing-h200", *(f"engine-sizing-h200/run-{n}" for n in (2, 3, 4))]
)
def test_each_committed_report_holds_the_arms_that_made_it(report: str) -> None:
    """The arms.toml beside a committed report is the run's plan: its arms, their fields and replicas."""
    recorded = json.loads((DOCS / report / "arms.json").read_text())
    arms = load_arms(DOCS / report / "arms.toml")
    assert [a.name for a in arms] == recorded["plan"]
    for arm, run in zip(arms, recorded["runs"], strict=False):
        assert (arm.settings, arm.replicas) == (run["settings"], run.get("replicas") or 1)


def test_an_arm_may_run_another_gpus_profile() -> None:
    l4, h200 = parse_arms(["l4", "h200:engine_gpu=h200,engine_max_num_seqs=64"])
    assert (l4.gpu("l4"), h200.gpu("l4")) == ("l4", "h200")
    assert h200.engine("l4").engine_max_num_seqs == 64 and h200.capture_size("l4") == 4096
    assert l4.capture_size("l4") == 2048
    with pytest.raises(ConfigError, match="engine_gpu 'tpu'"):
        parse_arms(["x:engine_gpu=tpu"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["/ckpt", "--clients", "0"])
    with pytest.raises(ConfigError, match="at least 5 s"):
        options(build_parser().parse_args(["/ckpt", "--seconds", "2"]))


def test_an_arms_env_reaches_the_engines_argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the supervisor of `dgemma run` reads from the arm's env is what vLLM is started with."""
    config = json.loads(BIG_CONFIG.read_text())
    config["quantization_config"] = {"quant_method": "compressed-tensors"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    fake_nvidia_smi(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    (arm,) = parse_arms(
        [
            "before:engine_async_scheduling=true,engine_max_cudagraph_capture_size=1024,engine_cudagraph_sizes=vllm"
        ]
    )
    for name, value in arm.env().items():
        monkeypatch.setenv(name, value)
    settings = SupervisorSettings(engine_mode="gpu", model_dir=tmp_path)
    argv, _ = engine_command(GatewaySettings(), settings)
    assert "--async-scheduling" in argv and "--no-async-scheduling" not in argv
    assert argv[argv.index("--max-cudagraph-capture-size") + 1] == "1024"


def test_a_level_from_vllms_counters_and_the_samples_in_its_window() -> None:
    after = engine_counters((DATA / "vllm-h200-metrics-batch32.txt").read_text())
    before = {"steps": 138.0, "step_tokens": 4332.0, "steps_le_512": 85.0, "steps_le_1024": 88.0,
              "steps_le_2048": 138.0, "requests_finished": 734.0}  # fmt: skip
    level = Level(clients=32, kind="throughput", seconds=20)
    stats = {"requests": 1200, "failures": 12, "rps": 60.0, "p50_ms": 480.0, "p95_ms": 610.0}
    queue = [{"t": 1.0, "running": 3, "waiting": 61}, {"t": 2.0, "running": 32, "waiting": 33},
             {"t": 3.0, "running": 3, "waiting": 60}]  # fmt: skip
    samples = [Sample(1.0, 20000, 40.0), Sample(1.25, 20100, 42.0)]
    summarize_level(level, stats, before, after, queue, samples, capture_size=512)
    assert level.rps == pytest.approx(60.0 * 0.99) and level.decisions_per_s == pytest.approx(3 * 59.4)
    e = level.engine
    assert e["steps"] == 1000 and e["steps_per_s"] == 50
    assert e["tokens_per_step"] == pytest.approx(250.0) and e["requests_per_step"] == pytest.approx(8.0)
    assert e["over_cap_share"] == pytest.approx((1000 - 800) / 1000)  # steps above the 512-token cap
    assert e["running_median"] == 3 and e["running_max"] == 32 and e["waiting_max"] == 61
    assert e["gpu_busy_pct"] == pytest.approx(41.0)
    summarize_level(level, stats, before, after, [], [], capture_size=2048)
    assert level.engine["over_cap_share"] == 0 and level.engine["running_median"] is None
    # A cap between bounds counts the steps above the next bound up: still certainly eager.
    summarize_level(level, stats, before, after, [], [], capture_size=768)
    assert level.engine["over_cap_share"] == pytest.approx(1 - (1089 - 88) / 1000)
    summarize_level(level, stats, before, after, [], [], capture_size=20000)  # above every bound
    assert level.engine["over_cap_share"] is None


def _run(
    index: int, arm: str, rps: dict[int, float], p50: float, settings: dict[str, str] | None = None
) -> ArmRun:
    run = ArmRun(index=index, arm=arm, settings=settings or {})
    argv = ["vllm", "serve", "/ckpt", "--port", str(9000 + index), "--max-num-seqs", "32"]
    phases = {"compile_s": 0.7, "graphs_s": 8.0, "graphs_gib": 0.46, "max_capture_size": 512.0,
              "vllm_version": "0.32.0"}  # fmt: skip
    run.start = {"ready_s": 81.0, "phases": phases,
                 "engine_argv": argv + (["--no-async-scheduling"] if settings else [])}  # fmt: skip
    run.idle_mib, run.peak_mib = 19083.0, 20013.0
    latency = Level(
        1, "latency", 15, requests=400, rps=25.0, decisions_per_s=25.0, p50_ms=p50, p95_ms=p50 * 1.4
    )
    run.levels = [latency] + [Level(n, "throughput", 20, requests=1000, rps=v, decisions_per_s=3 * v,
                                    p50_ms=400.0, p95_ms=600.0) for n, v in rps.items()]  # fmt: skip
    return run


def _report() -> Report:
    report = Report(
        host={
            "gpu": "NVIDIA H200",
            "gpu_mib": 143771.0,
            "driver": "580.159.04",
            "cpus": 16,
            "python": "3.12.3",
        },
        command="python -m devtools.lab.engine_arms /ckpt",
        plan=["baseline", "no-async", "baseline"],
        latency_seconds=15,
        seconds=20,
        clients=[8, 32, 64],
    )
    report.runs = [
        _run(1, "baseline", {8: 40.0, 32: 60.0, 64: 62.0}, 38.0),
        _run(2, "no-async", {8: 44.0, 32: 90.0, 64: 96.0}, 36.0, {"engine_async_scheduling": "false"}),
        _run(3, "baseline", {8: 42.0, 32: 66.0, 64: 62.0}, 40.0),
    ]
    return report


def test_ratios_against_the_baselines_mean_and_its_drift() -> None:
    report = _report()
    means = arm_means(report)
    assert means["baseline"]["rps@32"] == pytest.approx(63.0) and means["baseline"][
        "p50_ms"
    ] == pytest.approx(39.0)
    r = ratios(report)
    assert r["baseline"]["rps@32"] == pytest.approx(1.0)
    assert r["no-async"]["rps@32"] == pytest.approx(90 / 63) and r["no-async"]["p50_ms"] == pytest.approx(
        36 / 39
    )
    assert drift(report) == ["run 3 against run 1: @8 x1.050, @32 x1.100, @64 x1.000, p50@1 x1.053"]


def test_the_report_from_fixture_results(tmp_path: Path) -> None:
    report = _report()
    report.runs.append(ArmRun(index=4, arm="graphs", settings={}, skipped="not started: 1200 s had passed"))
    report.plan.append("graphs")
    write(report, tmp_path)
    md = (tmp_path / "arms.md").read_text()
    assert "| 2 | no-async | `engine_async_scheduling=false` | 81 s | 0.7 s |" in md
    assert "| no-async | 1 | x0.92 (36) | x0.92 (50) | x1.07 (44.0) | x1.43 (90.0) | x1.55 (96.0) |" in md
    assert "Drift of `baseline` within the run: run 3 against run 1" in md
    assert "| 4 | graphs | (today's) | not started: 1200 s had passed |" in md
    assert "run 2 (no-async): the baseline's argv plus `--no-async-scheduling`" in md
    assert "not an L4 measurement" in md and "20,013 ✓" in md
    data = json.loads((tmp_path / "arms.json").read_text())
    assert [r["arm"] for r in data["runs"]] == ["baseline", "no-async", "baseline", "graphs"]
    assert data["runs"][1]["levels"][2]["rps"] == 90.0
    assert (tmp_path / "arms.png").stat().st_size > 10_000


def test_a_run_cut_short_still_reports_and_nan_is_null(tmp_path: Path) -> None:
    report = _report()
    cut = report.runs[1]
    cut.levels = cut.levels[:2]
    cut.levels[0].p95_ms = math.nan
    cut.error = "GateError: locust failed in the throughput phase"
    cut.peak_mib = 23100.0
    write(report, tmp_path)
    md = markdown(report)
    assert "(cut: GateError" in md and "**over the L4**" in md
    data = json.loads((tmp_path / "arms.json").read_text())
    assert data["runs"][1]["levels"][0]["p95_ms"] is None
    plot(report, tmp_path / "again.png")


def test_an_arm_is_a_frozen_value() -> None:
    arm = Arm(name="a", fields={"engine_max_num_seqs": 64})
    assert arm == Arm(name="a", fields={"engine_max_num_seqs": "64"}) and arm != Arm(name="a")
    with pytest.raises(ValidationError, match="frozen"):
        arm.replicas = 2  # type: ignore[misc]


def test_an_arms_env_is_the_processes_own_variables(tmp_path: Path) -> None:
    """An arm's `env` (Python's or torch's own switches) reaches the kit's processes beside its
    settings, reads back from the arms.toml a run writes, and never carries the kit's own DGEMMA_
    variables (those are fields, checked as the supervisor reads them)."""
    (arm,) = parse_arms(
        ["nopyc:engine_multiproc_method=fork,env.PYTHONDONTWRITEBYTECODE=1,env.PYTHONPYCACHEPREFIX=/x"]
    )
    assert arm.env() == {
        "DGEMMA_ENGINE_MULTIPROC_METHOD": "fork", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/x",
    }  # fmt: skip
    path = tmp_path / "arms.toml"
    path.write_text(
        '[[arm]]\nname = "nopyc"\nfields = { engine_multiproc_method = "fork" }\n'
        'env = { PYTHONDONTWRITEBYTECODE = 1, PYTHONPYCACHEPREFIX = "/x" }\n'
    )
    assert load_arms(path) == [arm]
    (spelled,) = parse_arms(["nopyc:env.PYTHONPYCACHEPREFIX={out}/nopyc"])
    assert spelled.env(Path("/run/here"))["PYTHONPYCACHEPREFIX"] == "/run/here/nopyc"
    assert spelled.env()["PYTHONPYCACHEPREFIX"] == "{out}/nopyc"
    (tmp_path / "again.toml").write_text(arms_toml([arm]))
    assert load_arms(tmp_path / "again.toml") == [arm]
    assert arm != parse_arms(["nopyc:engine_multiproc_method=fork"])[0]
    for bad in ("x:env.DGEMMA_ENGINE_GPU=h200", "x:env.lower=1", "x:env.=1"):
        with pytest.raises(ConfigError, match="upper-case variable name"):
            parse_arms([bad])
    path.write_text('[[arm]]\nname = "x"\nenv = "PYTHONDONTWRITEBYTECODE=1"\n')
    with pytest.raises(ConfigError, match="arm 'x': env: a table of NAME = VALUE is needed"):
        load_arms(path)


def test_replicas_must_be_a_small_count() -> None:
    assert parse_arms(["two:replicas=2"])[0].replicas == 2
    for bad in ("x:replicas=0", "x:replicas=9", "x:replicas=two"):
        with pytest.raises(ConfigError, match="replicas"):
            parse_arms([bad])


def test_a_stack_of_two_engines_sums_their_counters_and_queues() -> None:
    """An `engine_replicas` arm reads every engine of its stack: counters add up, and the queues
    sampled apart add up per second."""
    from deploy.gpucheck.sampling import Samples
    from devtools.harness.instant_engine import metrics
    from devtools.harness.loopback import serve
    from devtools.lab.engine_arms import _Stack

    def engine(questions: int, running: int):  # type: ignore[no-untyped-def]
        body = metrics(questions, running).encode()
        return serve(lambda _seen: (200, {"content-type": "text/plain"}, body))

    with engine(3, 2) as one, engine(5, 4) as two:
        probes = [Samples() for _ in range(2)]
        stack = _Stack("http://gateway", [one.url, two.url], probes)
        counters = stack.counters()
    assert counters["prefix_cache_queries"] == (3 + 5) * 64 and counters["running"] == 2 + 4
    probes[0].queue += [{"t": 10.2, "running": 3, "waiting": 1, "kv_usage": 0.1}, {"t": 11.1, "running": 5}]
    probes[1].queue += [{"t": 10.7, "running": 4, "waiting": 2, "kv_usage": 0.3}, {"t": 13.0, "running": 9}]
    assert stack.queue(10.0, 12.0) == [
        {"t": 10.0, "running": 7, "waiting": 3, "kv_usage": 0.3},
        {"t": 11.0, "running": 5, "waiting": 0.0, "kv_usage": 0.0},
    ]
