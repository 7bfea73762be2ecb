"""Where the seconds of a GPU start go (issue 34, item 1): `dgemma run` started as `dgemma gpu-check`
starts it, several times in a row on one GPU host, each start with its own instrumentation.

The environment is gpu-check's own (`deploy.gpucheck.child.run_env`: the image's settings, the `l4`
profile held to its GPU's memory on a larger one, the check's compile-cache directory and a store).
The store is emptied first, so the first start compiles and saves its caches (cold) and every later
one restores them from the store, as a revision's later instances do (restored). Each start is
timed from the spawn of `dgemma run` to the supervisor's ready line, as gpu-check times it, then
stopped with SIGTERM; the next one starts on an empty GPU.

    python -m devtools.lab.coldstart CKPT --out DIR --store DIR [--cache-dir DIR] \\
        --start cold:debug,pyspy=20 --start restored:debug,pyspy=50 \\
        --start restored:importtime --start restored --start fork:VLLM_WORKER_MULTIPROC_METHOD=fork

A start is `NAME[:OPTION,...]`, each OPTION one of:
  debug       vLLM's and the kit's loggers at DEBUG (VLLM_LOGGING_LEVEL, DGEMMA_LOG_LEVEL)
  importtime  PYTHONPROFILEIMPORTTIME=1 for every interpreter of the start (and DGEMMA_LOG_LEVEL=DEBUG,
              since the supervisor relays a line without a level of its own at the previous one's)
  pyspy=HZ    `py-spy record --subprocesses --idle --nonblocking` (chrometrace: every thread's stack
              over time) on `vllm serve` from its first moments, the engine core included
  timeout=S   give up on a start not ready after S seconds (default 900)
  KEY=VALUE   one more environment variable of `dgemma run` (the supervisor passes its own
              environment to vLLM: deploy/runtime/supervisor.py)
Each start, whatever its options, also gets nvidia-smi every 200 ms (gpu.csv) and the CPU seconds,
threads and memory of each process under `dgemma run` every 250 ms (procs.tsv).

Files under OUT/NN-NAME/: run.log (seconds from the spawn and each line, as gpu-check's), start.json,
gpu.csv, procs.tsv, and with pyspy pyspy.json.gz (chrometrace; `ts` in microseconds from py-spy's
start, which start.json gives as `pyspy_started_s` from the spawn) and pyspy.log. OUT/starts.json
lists every start, rewritten after each. With --keep-store the store and the cache directory are
kept as an earlier run left them, so every start restores (--first-index numbers them on).
Needs vLLM's CUDA build (`vllm` on PATH), a GPU, and for pyspy `py-spy` on PATH.
docs/cold-start-h200/ has a run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import secrets
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from app.core.config import ConfigError
from app.core.net import free_port, free_ports
from app.core.polling import wait_until
from deploy.errors import GpuCheckError
from deploy.gpucheck.check import fit_budget, host_facts
from deploy.gpucheck.child import DgemmaRun, run_env
from deploy.gpucheck.startlog import cache_save_ended, parse_start_log
from deploy.runtime import nvidia_smi
from deploy.runtime.gpu_budget import GPUS
from devtools.lab.sweep import Entry, shorthand, validated

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_MIB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / 2**20


class StartSpec(Entry):
    """One start of the run (`--start NAME[:OPTION,...]`)."""

    env: dict[str, str] = Field(default_factory=dict)
    pyspy_hz: int = Field(0, ge=0)
    timeout_s: float = Field(900.0, gt=0)


def parse_start(spec: str) -> StartSpec:
    """`NAME[:OPTION,...]` (the module's docstring lists the options)."""
    name, options = shorthand(spec)
    fields: dict[str, Any] = {"name": name, "env": {}}
    for option in options:
        key, eq, value = option.partition("=")
        if option == "debug":
            fields["env"] |= {"VLLM_LOGGING_LEVEL": "DEBUG", "DGEMMA_LOG_LEVEL": "DEBUG"}
        elif option == "importtime":
            fields["env"] |= {"PYTHONPROFILEIMPORTTIME": "1", "DGEMMA_LOG_LEVEL": "DEBUG"}
        elif key == "pyspy":
            fields["pyspy_hz"] = value
        elif key == "timeout":
            fields["timeout_s"] = value
        elif eq and key and key.upper() == key:
            fields["env"][key] = value
        else:
            raise ConfigError(f"--start {spec!r}: unknown option {option!r}")
    return validated(StartSpec, fields, f"--start {spec!r}")


# -- the processes under `dgemma run` ---------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, str, float, int, float]]:
    """pid -> (ppid, comm, CPU seconds, threads, RSS MiB) of every process now."""
    table: dict[int, tuple[int, str, float, int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        # fields[0] is field 3 of proc(5): ppid 4, utime 14, stime 15, num_threads 20, rss 24
        cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
        table[int(entry)] = (int(fields[1]), comm, cpu, int(fields[17]), int(fields[21]) * PAGE_MIB)
    return table


def _descendants(table: dict[int, tuple[int, str, float, int, float]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, row in table.items():
        children.setdefault(row[0], []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _is_vllm_serve(pid: int) -> bool:
    """`vllm serve` once its interpreter runs (the script's #! line runs env, which execs python)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return False
    return exe.startswith("python") and b"serve" in argv and any(a.endswith(b"vllm") for a in argv)


class Watcher:
    """Samples the processes under `dgemma run` (procs.tsv) and, with `pyspy_hz`, starts py-spy on
    `vllm serve` as soon as its interpreter runs."""

    def __init__(self, run: DgemmaRun, out: Path, pyspy_hz: int) -> None:
        self.run, self.out, self.pyspy_hz = run, out, pyspy_hz
        self.serve_pid: int | None = None
        self.pids: dict[int, str] = {}  # every process seen: its last comm (vLLM renames its own)
        self.pyspy: subprocess.Popen[bytes] | None = None
        self.pyspy_started_s: float | None = None
        self.pyspy_error: str | None = None
        self._retries = 0
        self._stop = threading.Event()
        self._tsv = (out / "procs.tsv").open("w")
        self._tsv.write("t\tpid\tppid\tcomm\tcpu_s\tthreads\trss_mib\n")
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        last_sample = -1.0
        while not self._stop.is_set():
            t = time.monotonic() - self.run.started
            table = _proc_table()
            pids = _descendants(table, self.run.proc.pid) if self.run.proc.pid in table else []
            if self.serve_pid is None:
                self.serve_pid = next((p for p in pids if _is_vllm_serve(p)), None)
                if self.serve_pid is not None and self.pyspy_hz:
                    self._start_pyspy(self.serve_pid)
            elif self.pyspy and self.pyspy.poll() and self._retries < 5 and self.serve_pid in pids:
                self._retries += 1  # py-spy gave up on an interpreter not yet ready: once more
                self._start_pyspy(self.serve_pid)
            if t - last_sample >= 0.25:
                last_sample = t
                for pid in pids:
                    ppid, comm, cpu, threads, rss = table[pid]
                    self.pids[pid] = comm
                    self._tsv.write(f"{t:.2f}\t{pid}\t{ppid}\t{comm}\t{cpu:.2f}\t{threads}\t{rss:.0f}\n")
                self._tsv.flush()
            self._stop.wait(0.02 if self.serve_pid is None else 0.25)

    def _start_pyspy(self, pid: int) -> None:
        exe = shutil.which("py-spy")
        if exe is None:
            self.pyspy_error = "no py-spy on PATH"
            return
        argv = [
            exe, "record", "--pid", str(pid), "--subprocesses", "--idle", "--nonblocking",
            "--rate", str(self.pyspy_hz), "--format", "chrometrace",
            "--output", str(self.out / "pyspy.json"), "--duration", "1500",
        ]  # fmt: skip
        self.pyspy_started_s = round(time.monotonic() - self.run.started, 3)
        with (self.out / "pyspy.log").open("ab") as log:
            self.pyspy = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def finish(self) -> None:
        """After the start stopped: py-spy has written its trace (it ends with its target), gzipped."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._tsv.close()
        if self.pyspy is None:
            return
        try:
            self.pyspy.wait(timeout=180)
        except subprocess.TimeoutExpired:
            self.pyspy.terminate()  # SIGTERM: py-spy writes what it has
            self.pyspy.wait(timeout=60)
        trace = self.out / "pyspy.json"
        if trace.exists():
            with trace.open("rb") as src, gzip.open(self.out / "pyspy.json.gz", "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)
            trace.unlink()
        else:
            self.pyspy_error = f"py-spy wrote no trace (exit {self.pyspy.returncode}; pyspy.log)"


# -- one start --------------------------------------------------------------------------------------


@dataclass
class Options:
    model: Path
    out: Path
    store: Path
    cache_dir: Path
    starts: list[StartSpec]
    profile_gpu: str = "l4"
    keep_store: bool = False  # the store as it is (every start restores what an earlier run saved)
    first_index: int = 1
    startup_timeout_s: float = 1700.0  # the supervisor's wait for the engine, as gpu-check's


def _say(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def run_start(opts: Options, index: int, spec: StartSpec, on_larger: bool) -> dict[str, Any]:
    out = opts.out / f"{index:02d}-{spec.name}"
    out.mkdir(parents=True, exist_ok=True)
    b = fit_budget(opts.model, opts.profile_gpu)
    key = secrets.token_urlsafe(24)
    port, engine_port = free_port(), free_ports(b.profile.replicas)
    env = run_env(
        opts.model, opts.profile_gpu, opts.cache_dir, key=key, port=port, engine_port=engine_port,
        on_larger=on_larger, startup_timeout_s=opts.startup_timeout_s, cache_store=opts.store,
    ) | spec.env  # fmt: skip
    result: dict[str, Any] = {"index": index, "name": spec.name, "env": spec.env, "pyspy_hz": spec.pyspy_hz}
    result["baseline_mib"] = nvidia_smi.used_mib()
    with (out / "gpu.csv").open("w") as gpu_csv:
        smi = subprocess.Popen(
            nvidia_smi.command("timestamp,utilization.gpu,memory.used", every_ms=200, header=True),
            stdout=gpu_csv, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    result["spawn_unix"] = time.time()
    run = DgemmaRun(env, out / "run.log")
    watcher = Watcher(run, out, spec.pyspy_hz)
    try:
        result["ready_s"] = round(run.wait_ready(spec.timeout_s, lambda _t, _last: None), 2)
        _say(f"start {index} {spec.name}: ready in {result['ready_s']:.1f} s")
        if any("compile cache miss" in line for _, line in run.lines):
            # The cold start: its save ends before it is stopped (gpu-check's await_save).
            saved = wait_until(lambda: cache_save_ended(run.lines), 300, interval_s=1.0)
            result["cache_saved"] = bool(saved)
        time.sleep(2)  # the lines just after the ready one (the warm-up's JIT warnings come before)
    except GpuCheckError as e:
        result["error"] = str(e)[-3000:]
        _say(f"start {index} {spec.name} failed: {str(e)[-400:]}")
    finally:
        result["stop_s"], result["exit_code"] = run.stop()
        wait_until(lambda: nvidia_smi.used_mib() < 1024, 90, interval_s=1.0)
        watcher.finish()
        smi.terminate()
        smi.wait(timeout=10)
    result |= parse_start_log(run.lines)
    result |= {
        "serve_pid": watcher.serve_pid,
        "pids": watcher.pids,
        "pyspy_started_s": watcher.pyspy_started_s,
        "pyspy_error": watcher.pyspy_error,
    }
    (out / "start.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    return result


def run(opts: Options) -> list[dict[str, Any]]:
    if shutil.which("vllm") is None:
        raise ConfigError("no `vllm` on PATH: run where vLLM's CUDA build is installed")
    found = nvidia_smi.detect_gpu()
    if found is None:
        raise ConfigError("nvidia-smi reports no GPU")
    on_larger = not (found[1] <= GPUS[opts.profile_gpu] * 1.05)
    opts.out.mkdir(parents=True, exist_ok=True)
    for owned in () if opts.keep_store else (opts.cache_dir, opts.store):
        if owned.exists():
            shutil.rmtree(owned)  # the first start is cold; the later ones restore what it saved
    opts.cache_dir.mkdir(parents=True, exist_ok=True)
    host = host_facts()
    results: list[dict[str, Any]] = []
    for i, spec in enumerate(opts.starts, start=opts.first_index):
        last = opts.first_index + len(opts.starts) - 1
        _say(f"start {i} of {opts.first_index}-{last} {spec.name} {spec.env} pyspy={spec.pyspy_hz}")
        try:
            results.append(run_start(opts, i, spec, on_larger))
        except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as e:
            results.append({"index": i, "name": spec.name, "error": f"{type(e).__name__}: {e}"})
            _say(f"start {i} {spec.name} broke: {e!r}")
        summary = {"host": host, "model": str(opts.model), "starts": results}
        (opts.out / "starts.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", type=Path, help="the checkpoint (dgemma model random writes one)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--store", type=Path, required=True, help="the compile-cache store (emptied first)")
    p.add_argument("--cache-dir", type=Path, default=Path(".cache/coldstart/compile"))
    p.add_argument("--gpu", default="l4", help="the serving profile (default l4, as gpu-check's)")
    p.add_argument("--start", action="append", default=[], help="NAME[:OPTION,...]; repeatable")
    p.add_argument(
        "--keep-store", action="store_true",
        help="keep the store and the cache directory as they are (an earlier run's): every start restores",
    )  # fmt: skip
    p.add_argument("--first-index", type=int, default=1, help="the first start's NN (default 1)")
    args = p.parse_args(argv)
    specs = [parse_start(s) for s in args.start] or [parse_start("cold"), parse_start("restored")]
    opts = Options(
        model=args.model.resolve(), out=args.out.resolve(), store=args.store.resolve(),
        cache_dir=args.cache_dir.resolve(), starts=specs, profile_gpu=args.gpu,
        keep_store=args.keep_store, first_index=args.first_index,
    )  # fmt: skip
    for r in run(opts):
        _say(f"{r['name']}: ready {r.get('ready_s', '-')} s {r.get('error', '')[:200]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
