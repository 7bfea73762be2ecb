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


def total(mode: WeightsMode) -> tuple[float, float]:
    """(low, high) seconds from a request to a scaled-to-zero service to its answer."""
    ps = phases(mode)
    return sum(p.low_s for p in ps), sum(p.high_s for p in ps)
