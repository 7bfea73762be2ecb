"""A full-width DiffusionGemma bf16 source checkpoint with random weights and fewer layers: the input
`dgemma quantize` reads, to measure its time, peak memory and disk before anyone downloads 52 GB.

The tensors' names and shapes are those `deploy/models/scripts/random_model.py` takes from
transformers' own DiffusionGemmaForBlockDiffusion (the decoder's copy of the backbone, no lm_head,
no vision tower), with `num_hidden_layers` cut to `--layers` (the first N of the config's
`layer_types`; transformers makes the last one full attention). Tensors are written in the
model's order and cut into safetensors shards of at most `--shard-gib`, as `save_pretrained` does.
Random weights: figures of memory and speed, never of answers. Runs with the engine's python
(torch, transformers, safetensors):

    .venv-engine/bin/python devtools/lab/bf16_checkpoint.py OUT_DIR --layers 2 [--shard-gib 5]
        [--config deploy/models/diffusiongemma-26b-a4b.config.json]
        [--tokenizer deploy/models/dgemma-toy-alerts] [--seed 0]

Then, for example (`docs/deploy.md`, "From DiffusionGemma to a checkpoint"):

    /usr/bin/time -v .venv/bin/dgemma quantize OUT_DIR OUT_DIR-w4a16
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch  # type: ignore[import-not-found]  # the engine's python runs this file
from safetensors.torch import save_file  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "models" / "scripts"))
import random_model  # type: ignore[import-not-found]  # noqa: E402 (the engine's scripts are not a package)

MODELS = ROOT / "deploy" / "models"


def tensor(name: str, shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """bf16 values of a plausible scale: ones for norms and scalars, N(0, 0.02) otherwise."""
    if "norm" in name or "scale" in name or "scalar" in name:
        return torch.ones(shape, dtype=torch.bfloat16)
    return torch.randn(shape, generator=g, dtype=torch.bfloat16).mul_(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path, help="an empty directory")
    parser.add_argument("--layers", type=int, required=True, help="decoder layers (the 26B-A4B has 30)")
    parser.add_argument("--config", type=Path, default=MODELS / "diffusiongemma-26b-a4b.config.json")
    parser.add_argument("--tokenizer", type=Path, default=MODELS / "dgemma-toy-alerts")
    parser.add_argument("--shard-gib", type=float, default=5.0, help="largest shard (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()
    started = time.monotonic()
    arch = json.loads(a.config.read_text())
    text = arch["text_config"]
    if not 1 <= a.layers <= text["num_hidden_layers"]:
        raise SystemExit(f"--layers must be 1..{text['num_hidden_layers']}")
    text["num_hidden_layers"] = a.layers
    text["layer_types"] = text["layer_types"][: a.layers]
    tokens = json.loads((a.tokenizer / "config.json").read_text())
    specs, config = random_model.source_tensors(arch, tokens, canvas=32)
    a.out.mkdir(parents=True, exist_ok=True)
    if any(a.out.iterdir()):
        raise SystemExit(f"{a.out} is not empty")
    files = random_model.shards(specs, int(a.shard_gib * 2**30))
    g = torch.Generator().manual_seed(a.seed)
    weight_map: dict[str, str] = {}
    for i, names in enumerate(files, 1):
        file = "model.safetensors" if len(files) == 1 else f"model-{i:05d}-of-{len(files):05d}.safetensors"
        save_file({n: tensor(n, specs[n][0], g) for n in names}, str(a.out / file), metadata={"format": "pt"})
        weight_map |= dict.fromkeys(names, file)
        print(f"  {file}: {len(names)} tensors, {(a.out / file).stat().st_size / 1e9:.2f} GB", flush=True)
    if len(files) > 1:
        index = {"metadata": {}, "weight_map": weight_map}
        (a.out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    config.save_pretrained(str(a.out))
    for name in random_model.TOKENIZER_FILES:
        if (a.tokenizer / name).is_file():
            shutil.copy2(a.tokenizer / name, a.out / name)
    params = sum(random_model.numel(shape) for shape, _ in specs.values())
    size = sum(p.stat().st_size for p in a.out.glob("*.safetensors"))
    print(
        f"{a.out}: {a.layers} layers, {params / 1e9:.2f}B parameters, {size / 1e9:.2f} GB bf16 in "
        f"{len(files)} files, {time.monotonic() - started:.0f} s",
        flush=True,
    )


if __name__ == "__main__":
    main()
