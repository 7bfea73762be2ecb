"""What the GPU check measured, as `report.json` holds it: a start of `dgemma run`, a sample of the
GPU, and the whole check. Plain records: the check fills them, the report reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Start:
    """One start of `dgemma run`."""

    # "cold", "warm" (the cold start's caches left in place), "restored" (from the store's first
    # generation) or "steady" (from the second, which the restored start saved)
    cache: str
    ready_s: float  # spawn to the supervisor's ready line
    phases: dict[str, Any]
    kernels: dict[str, str]
    moments: dict[str, float]
    engine_argv: list[str]
    idle_mib: float = 0.0  # the whole GPU, after the ready line
    stop_s: float = 0.0  # SIGTERM to exit
    exit_code: int | None = None


@dataclass
class Sample:
    t: float  # seconds since the gate began
    used_mib: float
    util: float  # GPU utilization %, nvidia-smi's


@dataclass
class Check:
    """Everything the report says; `report.json` is this, as JSON."""

    host: dict[str, Any]
    profile: str
    gate_profile: str
    starts: list[Start] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    gate: dict[str, Any] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)  # prefix cache, queue
    samples: list[Sample] = field(default_factory=list)
    queue: list[dict[str, float]] = field(default_factory=list)  # vLLM's running/waiting over time
    phase_marks: dict[str, float] = field(default_factory=dict)
    verdict: list[str] = field(default_factory=list)  # what failed (empty: it starts, fits, meets)
