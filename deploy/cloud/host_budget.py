"""The Cloud Run instance's host memory while the engine loads, per weights mode (the operator's
side of the fit; `deploy.runtime.gpu_budget` is the GPU's). Computed from the checkpoint's sizes and
published figures, labelled as estimates where they are; none measured on an L4.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deploy.runtime.gpu_budget import BIG_CONFIG, Budget, FitError, GiB, Rows, load_arch, weight_bytes
from deploy.runtime.settings import WEIGHTS_MODES, WeightsMode

INSTANCE_MEMORY_GIB = 32.0  # Cloud Run's maximum with 8 vCPU, the most an L4 instance gets
SHARD_BYTES = 5 * 10**9  # transformers' default max_shard_size: the largest file of a computed checkpoint
PUBLISHED_BF16_BYTES = 51_647_701_024  # the full 26B-A4B bf16 checkpoint, vision tower included
HOST_ESTIMATES: dict[str, tuple[float, str]] = {
    "vllm": (
        6.0,
        "estimate: vLLM's API-server and engine-core processes with torch and CUDA (~2-3 GiB each)",
    ),
    "gateway": (0.2, "measured here: gateway and supervisor RSS on the CPU stack (~0.08 GiB each)"),
    "gcsfuse": (0.64, "published: gcsfuse buffered reads hold at most 640 MB (release notes 3.3.0)"),
    "collector": (0.5, "set: the Prometheus collector's memory limit (terraform/main.tf, local.collector)"),
    "headroom": (1.0, "estimate: kernel, page tables, Python heaps growing under load"),
}


@dataclass
class HostBudget(Rows):
    mode: WeightsMode
    memory_gib: float
    rows: list[tuple[str, float, str]] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.total_gib <= self.memory_gib


def checkpoint_bytes(b: Budget) -> tuple[int, int]:
    """(total, largest file) of the checkpoint a GPU budget sizes, as files on disk: the weights it
    computes plus the bf16 vision tower the published checkpoint keeps (served text-only, still stored)."""
    text = sum(weight_bytes(b.arch, b.profile.scheme, b.profile.group_size).values())
    vision = PUBLISHED_BF16_BYTES - sum(weight_bytes(load_arch(BIG_CONFIG), "bf16").values())
    total = int(text + max(0, vision))
    return total, min(total, SHARD_BYTES)


def host_budget(
    mode: WeightsMode, total_bytes: int, largest_bytes: int, memory_gib: float = INSTANCE_MEMORY_GIB
) -> HostBudget:
    """The instance's memory (its disk is memory too) while the engine loads, per weights mode."""
    copy = total_bytes / GiB if mode == "download" else 0.0
    # Loading reads a file into host memory before the GPU copy, unless that file already is memory.
    load = 0.0 if mode == "download" else largest_bytes / GiB
    b = HostBudget(mode, memory_gib)
    b.rows = [
        (
            "checkpoint on the memory disk",
            copy,
            {
                "download": "downloaded into the instance's in-memory filesystem",
                "baked": "none: read-only image layers do not count against instance memory",
                "gcs_fuse": "none: read in place from the Cloud Storage mount",
            }[mode],
        ),
        ("file being loaded (estimate)", load, "page cache of the largest file while vLLM reads it"),
        ("vLLM host memory", *HOST_ESTIMATES["vllm"]),
        ("gateway + supervisor", *HOST_ESTIMATES["gateway"]),
        (
            "Cloud Storage FUSE",
            HOST_ESTIMATES["gcsfuse"][0] if mode == "gcs_fuse" else 0.0,
            HOST_ESTIMATES["gcsfuse"][1],
        ),
        ("metrics collector", *HOST_ESTIMATES["collector"]),
        ("headroom", *HOST_ESTIMATES["headroom"]),
    ]
    return b


def check_host_fits(b: HostBudget) -> None:
    if not b.fits:
        raise FitError(
            f"weights mode {b.mode!r} needs {b.total_gib:.1f} GiB of instance memory but the instance has "
            f"{b.memory_gib:.0f} GiB; largest: "
            + ", ".join(f"{item} {gib:.1f} GiB" for item, gib, _ in sorted(b.rows, key=lambda r: -r[1])[:2])
            + ". Bake the checkpoint into the image (weights mode baked) or mount it (gcs_fuse)."
        )


def default_weights_mode(
    total_bytes: int, largest_bytes: int, memory_gib: float = INSTANCE_MEMORY_GIB
) -> WeightsMode:
    """The fastest-starting mode whose host budget fits."""
    for mode in WEIGHTS_MODES:
        if host_budget(mode, total_bytes, largest_bytes, memory_gib).fits:
            return mode
    raise FitError(f"no weights mode fits {memory_gib:.0f} GiB of instance memory")
