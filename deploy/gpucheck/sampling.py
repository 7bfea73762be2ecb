"""What is sampled while a load runs: the whole GPU's memory and use (nvidia-smi) and vLLM's queue
(its /metrics)."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx

from deploy.gpucheck.metrics import engines_counters
from deploy.gpucheck.record import Sample
from deploy.runtime import nvidia_smi


@dataclass
class Samples:
    """A sampling's buffer, filled as the samples come (t: seconds since the sampling's `t0`)."""

    gpu: list[Sample] = field(default_factory=list)
    queue: list[dict[str, float]] = field(default_factory=list)  # vLLM's running/waiting, KV use


@contextmanager
def sampling(into: Samples, engine_urls: list[str], t0: float) -> Iterator[None]:
    """nvidia-smi's memory and utilization every 250 ms, vLLM's queue (all engines') every second,
    until the block ends."""
    smi = subprocess.Popen(
        nvidia_smi.command("memory.used,utilization.gpu", every_ms=250),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    done = threading.Event()

    def read_smi() -> None:
        assert smi.stdout is not None
        for line in smi.stdout:
            try:
                used, util = (float(x) for x in line.split(","))
            except ValueError:
                continue
            into.gpu.append(Sample(round(time.monotonic() - t0, 2), used, util))

    def poll_engine() -> None:
        with httpx.Client(timeout=5) as http:
            while not done.wait(1.0):
                try:
                    c = engines_counters(engine_urls, http)
                except httpx.HTTPError:
                    continue
                into.queue.append({"t": round(time.monotonic() - t0, 1), **c})

    threads = [
        threading.Thread(target=read_smi, daemon=True),
        threading.Thread(target=poll_engine, daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        done.set()
        smi.terminate()
        smi.wait(timeout=10)
        for t in threads:
            t.join(timeout=5)
