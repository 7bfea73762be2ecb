"""`dgemma`: the kit's command line (local stack, gateway, tiny model)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from app.settings import Settings

console = Console(stderr=True)
ENGINE_DIR = Path(__file__).resolve().parent / "engine"
BIG_CONFIG = Path(__file__).resolve().parent / "models" / "diffusiongemma-26b-a4b.config.json"
DEV_DEFAULTS = {
    "DGEMMA_SERVED_MODEL": "dgemma-tiny-random",
    "DGEMMA_MODEL_DESCRIPTION": (
        "Tiny random-weight DiffusionGemma for local development and tests "
        "(real architecture, ~180k parameters): answers carry no meaning."
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dgemma", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="run the local stack: vLLM (CPU) on the tiny model + the gateway")
    dev.add_argument("--port", type=int, help="gateway port (default: $PORT or 8080)")
    dev.add_argument("--engine-port", type=int, help="internal vLLM port (default 8100)")
    dev.add_argument("--engine-log", type=Path, default=Path(".cache/engine.log"))
    dev.set_defaults(handler=_dev)

    run = sub.add_parser("run", help="production start: engine (DGEMMA_ENGINE_MODE) then gateway on $PORT")
    run.add_argument("--port", type=int)
    run.add_argument("--host")
    run.set_defaults(handler=_run)

    serve = sub.add_parser("serve", help="run the gateway only; the engine URL comes from settings")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(handler=_serve)

    model = sub.add_parser("model", help="generate the tiny random-weight DiffusionGemma")
    model.add_argument("out_dir", type=Path, nargs="?")
    model.set_defaults(handler=_model_cmd)

    fit = sub.add_parser(
        "fit",
        help="GPU memory budget and vLLM flags for a checkpoint (computed); defaults: the DGEMMA_ENGINE_* "
        "settings the supervisor uses, and the checkpoint's own quantization (the 26B-A4B as W4A16 g64 "
        "when no checkpoint is given)",
    )
    fit.add_argument("checkpoint", type=Path, nargs="?", help="config.json or its directory")
    fit.add_argument("--gpu")
    fit.add_argument("--scheme", choices=["w4a16", "bf16"])
    fit.add_argument("--group-size", type=int)
    fit.add_argument("--max-num-seqs", type=int)
    fit.add_argument("--canvas", type=int)
    fit.add_argument("--prompt-tokens", type=int)
    fit.add_argument("--gpu-memory-utilization", type=float)
    fit.set_defaults(handler=_fit)

    weights = sub.add_parser("weights", help="checkpoint to/from GCS with a sha256 manifest")
    wsub = weights.add_subparsers(dest="action", required=True)
    up = wsub.add_parser("upload", help="upload a checkpoint directory, manifest last")
    up.add_argument("src", type=Path)
    up.add_argument("url", help="gs://bucket/prefix")
    down = wsub.add_parser("download", help="download and verify (skips files that already verify)")
    down.add_argument("url", help="gs://bucket/prefix")
    down.add_argument("dst", type=Path)
    down.add_argument("--workers", type=int, default=8)
    check = wsub.add_parser("verify", help="check a local checkpoint against its manifest.json")
    check.add_argument("dir", type=Path)
    weights.set_defaults(handler=_weights)

    quant = sub.add_parser("quantize", help="W4A16 (compressed-tensors) with every expert quantized")
    quant.add_argument("src", type=Path)
    quant.add_argument("dst", type=Path)
    quant.add_argument("--group-size", type=int, choices=[32, 64], default=64)
    quant.set_defaults(handler=_quantize)

    load = sub.add_parser("loadtest", help="the rollout gate: Locust latency + batch@32 phases vs a profile")
    load.add_argument("--host", required=True, help="gateway base URL")
    load.add_argument("--profile", default="cpu-smoke", help="a profile of loadtest/profiles.toml")
    load.add_argument("--out", type=Path, default=Path("reports/loadtest"))
    load.add_argument("--engine-url", help="raw vLLM URL: adds the gateway-overhead phase")
    load.add_argument("--engine-model", default="dgemma-tiny-random", help="vLLM's served name")
    load.add_argument("--target", action="append", default=[], metavar="NAME=VALUE", help="override a limit")
    load.add_argument("--latency-seconds", type=int)
    load.add_argument("--throughput-seconds", type=int)
    load.set_defaults(handler=_loadtest)

    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


def _env_overrides(args: argparse.Namespace) -> None:
    # Flags are a shorthand for the settings' env vars: the Settings object stays the one source.
    if getattr(args, "port", None):
        os.environ["PORT"] = str(args.port)
    if getattr(args, "engine_port", None):
        os.environ["DGEMMA_ENGINE_PORT"] = str(args.engine_port)
    if getattr(args, "host", None):
        os.environ["DGEMMA_HOST"] = args.host


def _dev(args: argparse.Namespace) -> int:
    from app.observability import configure_logging

    for key, value in DEV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    _env_overrides(args)
    settings = _settings()
    if settings is None:
        return 2
    configure_logging(settings.log_level)
    if not settings.engine_python.exists():
        console.print(f"[bold]No engine environment at {settings.engine_python}: creating it[/]")
        venv = settings.engine_python.parent.parent
        subprocess.run(["bash", str(ENGINE_DIR / "setup_engine.sh"), str(venv)], check=True)
    if _model(settings.model_dir, settings.engine_python) != 0:
        return 1
    console.print(
        f"Starting vLLM (CPU, Triton interpreter) on {settings.model_dir}; log: {args.engine_log} "
        "(about 30-60 s)"
    )
    return _supervise(settings, args.engine_log)


def _run(args: argparse.Namespace) -> int:
    """Production start (the image's entrypoint): the engine per DGEMMA_ENGINE_MODE, then the gateway."""
    from app.observability import configure_logging

    _env_overrides(args)
    settings = _settings()
    if settings is None:
        return 2
    configure_logging(settings.log_level)
    problem = _prepare_weights(settings)
    if problem:
        console.print(f"[red]refusing to start the engine:[/] {problem}")
        return 2
    return _supervise(settings, None)


def _prepare_weights(settings: Settings) -> str | None:
    """Download (DGEMMA_WEIGHTS_URL) or check baked weights against the manifest; a problem, or None."""
    from deploy import weights

    started = time.monotonic()
    if settings.weights_url:
        try:
            client = weights.client_from_env()
            report = weights.download(settings.weights_url, settings.model_dir, client)
        except weights.WeightsError as e:
            return str(e)
        console.print(
            f"weights: {len(report.downloaded)} files ({report.bytes_downloaded / 2**30:.2f} GiB) fetched, "
            f"{len(report.skipped)} already verified, in {time.monotonic() - started:.1f} s"
        )
        return None
    problems = weights.verify(settings.model_dir)
    if problems:
        return f"baked weights in {settings.model_dir} fail their manifest: " + "; ".join(problems)
    console.print(f"weights: baked checkpoint verified in {time.monotonic() - started:.1f} s")
    return None


def _supervise(settings: Settings, engine_log: Path | None) -> int:
    from deploy.supervisor import Supervisor

    try:
        supervisor = Supervisor(settings, engine_log=engine_log)
    except (ValueError, OSError) as e:  # FlashInfer, a profile that cannot fit (FitError), no config
        console.print(f"[red]refusing to start:[/] {e}")
        return 2
    return supervisor.run()


def _settings() -> Settings | None:
    """Settings from the environment, or None after printing what is wrong."""
    from pydantic import ValidationError

    from app.settings import Settings

    try:
        return Settings()
    except ValidationError as e:
        for err in e.errors():
            where = ".".join(str(p) for p in err["loc"]) or "settings"
            console.print(f"[red]invalid setting {where}:[/] {err['msg']}")
        return None


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.main import create_app

    _env_overrides(args)
    settings = _settings()
    if settings is None:
        return 2
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        # Cloud Run allows 10 s between SIGTERM and SIGKILL; keep some for the engine.
        timeout_graceful_shutdown=max(1, int(settings.shutdown_grace_s) - 2),
    )
    return 0


def _loadtest(args: argparse.Namespace) -> int:
    from loadtest.gate import Profile, run

    profile = Profile.load(args.profile)
    for override in args.target:
        name, _, value = override.partition("=")
        if name not in profile.targets:
            console.print(f"[red]unknown target {name!r}[/]; known: {', '.join(profile.targets)}")
            return 2
        bound = "max" if "max" in profile.targets[name] else "min"
        profile.targets[name] = {bound: float(value), "source": "command line override"}
    if args.latency_seconds:
        profile.latency_seconds = args.latency_seconds
    if args.throughput_seconds:
        profile.throughput_seconds = args.throughput_seconds
    return run(args.host, profile, args.out, engine_url=args.engine_url, engine_model=args.engine_model)


def _quantize(args: argparse.Namespace) -> int:
    """Runs with the engine's python (torch, compressed-tensors); the report lands beside the weights."""
    settings = _settings()
    if settings is None:
        return 2
    argv = [str(settings.engine_python), str(ENGINE_DIR / "quantize.py"), str(args.src), str(args.dst)]
    return subprocess.run([*argv, "--group-size", str(args.group_size)]).returncode


def _weights(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from deploy import weights

    try:
        if args.action == "verify":
            problems = weights.verify(args.dir)
            for p in problems:
                console.print(f"[red]{p}[/]")
            console.print("verified" if not problems else f"{len(problems)} problem(s)")
            return 1 if problems else 0
        client = weights.client_from_env()
        if args.action == "upload":
            manifest = weights.upload(args.src, args.url, client)
            console.print(
                f"uploaded {len(manifest.files)} files, {manifest.total_bytes} bytes, manifest last"
            )
            return 0
        manifest = weights.fetch_manifest(args.url, client)
        columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn())
        with Progress(*columns, console=console) as bar:
            task = bar.add_task("download", total=manifest.total_bytes)
            report = weights.download(
                args.url,
                args.dst,
                client,
                workers=args.workers,
                progress=lambda n: bar.advance(task, n),
                manifest=manifest,
            )
        console.print(
            f"downloaded {len(report.downloaded)} files, skipped {len(report.skipped)} that verified"
        )
        return 0
    except weights.WeightsError as e:
        console.print(f"[red]weights:[/] {e}")
        return 2


def _fit(args: argparse.Namespace) -> int:
    import dataclasses

    from rich.table import Table

    from deploy.fit import Arch, FitError, budget, check_fits, load_config, profile_for, vllm_flags

    settings = _settings()
    if settings is None:
        return 2
    checkpoint = args.checkpoint or BIG_CONFIG
    config = load_config(checkpoint)
    flags = {
        "gpu": args.gpu,
        "scheme": args.scheme,
        "group_size": args.group_size,
        "max_num_seqs": args.max_num_seqs,
        "canvas": args.canvas,
        "prompt_tokens": args.prompt_tokens,
        "gpu_memory_utilization": args.gpu_memory_utilization,
    }
    if args.checkpoint is None:  # the unquantized 26B-A4B config: size the published W4A16 recipe
        flags = {"scheme": "w4a16", "group_size": 64} | {k: v for k, v in flags.items() if v is not None}
    profile = dataclasses.replace(
        profile_for(settings, config), **{k: v for k, v in flags.items() if v is not None}
    )
    try:
        b = budget(Arch.from_config(config), profile)
    except FitError as e:
        console.print(f"[red]cannot fit:[/] {e}")
        return 1
    table = Table(title=f"{checkpoint.name} on {profile.gpu} (computed, not measured on the GPU)")
    table.add_column("item")
    table.add_column("GiB", justify="right")
    table.add_column("how")
    for item, gib, how in b.rows:
        table.add_row(item, f"{gib:.2f}", how)
    table.add_row("[bold]total[/]", f"[bold]{b.total_gib:.2f}[/]", f"available: {b.available_gib:.2f} GiB")
    Console().print(table)
    try:
        check_fits(b)
    except FitError as e:
        console.print(f"[red]does not fit:[/] {e}")
        return 1
    print("vLLM flags:", " ".join(vllm_flags(b)))
    return 0


def _model_cmd(args: argparse.Namespace) -> int:
    settings = _settings()
    if settings is None:
        return 2
    return _model(args.out_dir or settings.model_dir, settings.engine_python)


def _model(out: Path, engine_python: Path) -> int:
    """Generate the tiny model with the engine's python, unless it is already there."""
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        console.print(f"tiny model present at {out}")
        return 0
    console.print(f"generating the tiny random-weight DiffusionGemma in {out}")
    return subprocess.run([str(engine_python), str(ENGINE_DIR / "tiny_model.py"), str(out)]).returncode


if __name__ == "__main__":
    sys.exit(main())
