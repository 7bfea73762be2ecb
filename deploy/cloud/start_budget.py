"""The cold-start budget of an L4 instance, per weights mode: every phase with its range and where
the figure comes from. Projections until measured on an L4; `cold_start_budget_s` in terraform/ must
cover the slowest (tests/terraform) and docs/deploy.md's table is generated from here (`make docs`).

Sources: shared reference "Cold start on Cloud Run L4" (published measurements, cited there), this
repository's own measurements where the label says "measured here", and the GPU check on an H200
(docs/gpu-check-h200/): the engine's phases were measured there, through the supervisor, and are
projected to the L4's host (8 vCPU instead of 16 cores: vLLM's compilation runs on the CPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from deploy.runtime.settings import WeightsMode

CHECKPOINT_GB = 15.7  # the 26B-A4B W4A16 g64 checkpoint with its bf16 vision tower (`dgemma fit`)


@dataclass(frozen=True)
class StartPhase:
    name: str
    low_s: float
    high_s: float
    kind: str  # "published", "derived", "measured here", "projected"
    how: str


COMMON_START = [
    StartPhase(
        "instance and container up", 6, 10, "published", "L4 drivers ready ~5 s (doc); 4-11 s measured"
    ),
    StartPhase(
        "vLLM's processes up (imports, config, engine core)",
        45,
        70,
        "projected",
        "measured on an H200: 43 s from the engine's spawn to its engine core (warm start, bytecode "
        "compiled), 23 s with the engine core forked (docs/cold-start-h200/arms/); more on 8 vCPU",
    ),
]
COMMON_END = [
    StartPhase(
        "engine init, compile cache cold",
        200,
        400,
        "projected",
        "measured on an H200: 196-239 s (torch.compile 104-127 s), CPU-bound; x1-2 on 8 vCPU. A "
        "revision's later instances restore the first one's compile cache (0.8-1.3 s for 17.4 MB): "
        "ready 81-87 s against 320-326 s cold (docs/compile-cache-h200/); with the engine core forked "
        "and the profile's 75 graph sizes, 65 s against 98-101 s (docs/cold-start-h200/arms/)",
    ),
    StartPhase(
        "warm-up decision, gateway ready",
        3,
        25,
        "projected",
        "measured on an H200: the supervisor's warm-up decision 17-19 s with cold caches (vLLM "
        "JIT-compiles three Triton kernels at the first read), 2.3-5.8 s restored; the gateway 1 s",
    ),
]
WEIGHTS: dict[WeightsMode, list[StartPhase]] = {
    "baked": [
        StartPhase(
            "weights from the image",
            CHECKPOINT_GB / 0.45,
            CHECKPOINT_GB / 0.35,
            "derived",
            f"{CHECKPOINT_GB} GB at the 0.35-0.45 GB/s measured for image streaming on a Cloud Run L4",
        ),
        StartPhase(
            "checkpoint check",
            0,
            1,
            "measured here",
            "stamped read-only checkpoint: sizes, 0.7 ms (hashing: ~1 s/GiB; make bench-weights)",
        ),
    ],
    "download": [
        StartPhase(
            "download into memory",
            CHECKPOINT_GB / 1.1,
            CHECKPOINT_GB / 0.125,
            "derived",
            f"{CHECKPOINT_GB} GB at 1.05 GiB/s (djev-run, RTX PRO 6000) down to the documented 1 Gbps cap",
        ),
        StartPhase(
            "sha256 of every file", 15, 30, "measured here", "0.99 GiB/s on one core here; files one by one"
        ),
        StartPhase("weights from memory", 5, 10, "published", "5.97 s for 17.5 GiB from RAM (djev-run)"),
    ],
    "gcs_fuse": [
        StartPhase(
            "checkpoint check", 1, 3, "projected", "object metadata (MD5/CRC32C) against the manifest"
        ),
        StartPhase(
            "weights through the mount",
            CHECKPOINT_GB / 1.1,
            CHECKPOINT_GB / 0.05,
            "derived",
            f"{CHECKPOINT_GB} GB: tuned buffered reads ~1 GiB/s at best, default options ~50 MB/s (measured)",
        ),
    ],
}


def phases(mode: WeightsMode) -> list[StartPhase]:
    return [*COMMON_START, *WEIGHTS[mode], *COMMON_END]


def span(ps: list[StartPhase]) -> tuple[float, float]:
    """(low, high) seconds of phases one after the other."""
    return sum(p.low_s for p in ps), sum(p.high_s for p in ps)


def total(mode: WeightsMode) -> tuple[float, float]:
    """(low, high) seconds from a request to a scaled-to-zero service to its answer."""
    return span(phases(mode))


@dataclass(frozen=True)
class RestoredPhase:
    """A phase of a restored start (a revision's later instance: compile caches restored, bytecode
    compiled), as measured on an H200, and the factor range taken for an L4 instance's host."""

    name: str
    h200_s: float
    low_x: float
    high_x: float
    why: str


# The steady restored start on an H200, phase by phase: docs/cold-start-h200/bytecode/phases.md,
# run 4 (40.7 s spawn to ready; tests/deploy/cloud/test_restored_start.py holds the two together).
# Its weights' read came from a warm page cache (~0.6 s of the loader's 5.1 s, docs/cold-start-h200/
# arms/README.md): on a new instance the weights first arrive as the mode brings them.
_CPU = (1.0, 1.5, "single-core Python on 8 vCPU, not the H200 host's 16 cores")
RESTORED_ENGINE = [
    RestoredPhase("supervisor: weights check, compile-cache restore", 1.2, *_CPU),
    RestoredPhase("vLLM's API server: interpreter and imports", 12.2, *_CPU),
    RestoredPhase("config, engine core started", 1.2, *_CPU),
    RestoredPhase("engine core: device, distributed init, worker", 1.3, *_CPU),
    RestoredPhase(
        "weights: model init, tensors to the GPU",
        5.1,
        1.0,
        2.0,
        "per-tensor Python (35,571 tensors), then PCIe Gen4 x16 against Gen5: ~1 s more for 15.7 GB",
    ),
    RestoredPhase(
        "weights: Marlin repack",
        2.2,
        1.0,
        3.0,
        "a GPU kernel per layer: the L4's 300 GB/s against the H200's 4.8 TB/s, mostly launch overhead here",
    ),
    RestoredPhase("torch.compile: the backbone from the AOT cache", 1.1, *_CPU),
    RestoredPhase(
        "profiling run, KV cache",
        1.0,
        1.0,
        4.0,
        "one dummy forward: the L4 has about an eighth of the compute",
    ),
    RestoredPhase(
        "warmup_kernels (the sampler from the restored cache)",
        3.3,
        1.0,
        2.0,
        "dummy steps and the sampler's cached graph: CPU first, some GPU",
    ),
    RestoredPhase(
        "CUDA graphs: PIECEWISE and FULL",
        7.7,
        1.0,
        2.0,
        "75 sizes captured: the launches are recorded on the CPU, each replayed once on the GPU",
    ),
    RestoredPhase("engine core after capture, API server app, uvicorn", 2.1, *_CPU),
    RestoredPhase(
        "the supervisor's warm-up decision",
        1.2,
        1.0,
        3.0,
        "one real decision on the GPU, Triton kernels cached",
    ),
    RestoredPhase("gateway up, ready", 1.1, *_CPU),
]
# What a new instance needs before vLLM's loader reads the weights, per mode: the container first,
# then the weights as the mode brings them (the cold start's own phases above).
_ARRIVAL_NAMES = {
    "baked": ("weights from the image",),
    "download": ("download into memory", "sha256 of every file"),
    "gcs_fuse": ("checkpoint check", "weights through the mount"),
}


def restored_engine() -> list[StartPhase]:
    """The engine's phases of a restored start on an L4: the H200's, times their factors."""
    return [
        StartPhase(r.name, r.h200_s * r.low_x, r.h200_s * r.high_x, "projected",
                   f"{r.h200_s:.1f} s on an H200 x{r.low_x:g}-{r.high_x:g}: {r.why}")
        for r in RESTORED_ENGINE
    ]  # fmt: skip


def restored_arrival(mode: WeightsMode) -> list[StartPhase]:
    """What a restored start on an L4 waits for before the engine: the container, the weights."""
    return [COMMON_START[0], *(p for p in WEIGHTS[mode] if p.name in _ARRIVAL_NAMES[mode])]


def restored_phases(mode: WeightsMode) -> list[StartPhase]:
    """A restored start on an L4 in `mode`: the container, the weights' arrival, then the engine."""
    return [*restored_arrival(mode), *restored_engine()]


def restored_total(mode: WeightsMode) -> tuple[float, float]:
    """(low, high) seconds of a restored start on an L4: a revision's instances after its first."""
    return span(restored_phases(mode))
