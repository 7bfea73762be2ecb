"""How far two checkpoints' weights are apart, tensor by tensor (run with the engine's python).

    python tests/engine_scripts/weights_apart.py A.safetensors B.safetensors RTOL ATOL

prints JSON: whether both hold the same tensor names and shapes, the number of elements, how many
are outside `|a - b| <= ATOL + RTOL * |b|` (torch.isclose's rule, compared in float32), and the
largest absolute difference.
"""

from __future__ import annotations

import json
import sys

import torch
from safetensors.torch import load_file


def main() -> None:
    a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
    rtol, atol = float(sys.argv[3]), float(sys.argv[4])
    layout = {k: tuple(v.shape) for k, v in a.items()} == {k: tuple(v.shape) for k, v in b.items()}
    elements = outside = 0
    max_abs = 0.0
    if layout:
        for name, x in a.items():
            x, y = x.float(), b[name].float()
            elements += x.numel()
            outside += int((~torch.isclose(x, y, rtol=rtol, atol=atol)).sum())
            max_abs = max(max_abs, float((x - y).abs().max()) if x.numel() else 0.0)
    print(json.dumps({"same_layout": layout, "elements": elements, "outside": outside, "max_abs": max_abs}))


if __name__ == "__main__":
    main()
