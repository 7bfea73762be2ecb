"""vLLM 0.32's own choice of GPU sampler, run on CPU (with the engine's python): does building the
V2 GPU model runner's sampler import FlashInfer, which the image does not have?

    python tests/engine_scripts/sampler_selection.py [CAPABILITY:SMS ...]   (default 8.9:58, an L4)

The only patch is the platform check (`current_platform` says CUDA, with each given compute
capability and SM count in turn); the code that decides is vLLM's own, in the environment this
process was given (the test passes the supervisor's engine environment). FlashInfer is made
unimportable, as in the image, and every attempt to import it is recorded. Prints a JSON line for
each GPU.
"""

from __future__ import annotations

import importlib.abc
import inspect
import json
import sys
from typing import Any

attempts: list[str] = []


class NoFlashInfer(importlib.abc.MetaPathFinder):
    """The image's state: FlashInfer uninstalled. Records who tries."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "flashinfer" or name.startswith("flashinfer."):
            attempts.append(name)
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name == "vllm.v1.attention.backends.flashinfer":
            attempts.append(name)
        return None


def main() -> None:
    sys.meta_path.insert(0, NoFlashInfer())
    from vllm.platforms import current_platform
    from vllm.platforms.interface import DeviceCapability

    platform: Any = current_platform
    platform.is_cuda = lambda: True
    from vllm.v1.worker.gpu.sample import sampler

    # The V2 runner's Sampler decides in its constructor through this very function.
    decides = "flashinfer_sampler_supported()" in inspect.getsource(sampler.Sampler.__init__)
    for gpu in sys.argv[1:] or ["8.9:58"]:
        capability, sms = gpu.split(":")
        major, minor = (int(x) for x in capability.split("."))
        platform.get_device_capability = lambda device_id=0, c=(major, minor): DeviceCapability(*c)
        platform.num_compute_units = lambda device_id=0, n=int(sms): n
        attempts.clear()
        result: dict[str, Any] = {"gpu": gpu, "sampler_asks": decides, "attempts": attempts, "error": None}
        try:
            result["use_flashinfer"] = sampler.flashinfer_sampler_supported()
        except Exception as e:  # what killed the engine on the H200
            result["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
