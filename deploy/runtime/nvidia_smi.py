"""nvidia-smi, the kit's one way to ask the driver about the GPU: which one this host has (the
supervisor's check at start, the compile cache's key) and, for `dgemma gpu-check` and its
harnesses, its memory in use and samples of it over time."""

from __future__ import annotations

import os
import shutil
import subprocess

from app.core.config import ConfigError

# Cloud Run mounts the driver's tools here; PATH may not include it.
NVIDIA_SMI_DIRS = ("/usr/local/nvidia/bin", "/usr/bin")


def find() -> str | None:
    """nvidia-smi's path (on PATH, or where Cloud Run mounts it), or None without one."""
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(NVIDIA_SMI_DIRS)
    return shutil.which("nvidia-smi", path=path)


def command(fields: str, *, every_ms: int | None = None, header: bool = False) -> list[str]:
    """The argv that prints `fields` (nvidia-smi's --query-gpu names) of each GPU as CSV without
    units, once or every `every_ms`; refused on a host without nvidia-smi."""
    smi = find()
    if smi is None:
        raise ConfigError("no nvidia-smi: this host has no NVIDIA GPU to check")
    csv = "--format=csv,nounits" if header else "--format=csv,noheader,nounits"
    return [smi, f"--query-gpu={fields}", csv, *(["-lms", str(every_ms)] if every_ms else [])]


def query(fields: str) -> list[str]:
    """The first GPU's `fields`, as nvidia-smi prints them."""
    out = subprocess.run(command(fields), capture_output=True, text=True, timeout=30, check=True).stdout
    return [value.strip() for value in out.strip().splitlines()[0].split(",")]


def detect_gpu() -> tuple[str, float] | None:
    """(name, memory in GiB) of the first GPU as nvidia-smi reports it, or None without one."""
    if find() is None:
        return None
    try:
        name, mib = query("name,memory.total")
        return name, float(mib) / 1024
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return None


def used_mib() -> float:
    """The whole first GPU's memory in use, every process's."""
    return float(query("memory.used")[0])
