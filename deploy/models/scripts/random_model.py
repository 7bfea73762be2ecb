"""A DiffusionGemma checkpoint of any size with random weights, in the W4A16 layout `dgemma quantize`
writes (`w4a16.py`: the same names, shapes, dtypes and compressed-tensors config).

Usage (with a python that has torch, transformers and safetensors, e.g. the engine's; a GPU makes
it fast: the 26B-A4B is ~14.5 GB, written in seconds):
    python deploy/models/scripts/random_model.py ARCH_CONFIG TOKENIZER_DIR OUT_DIR [--group-size 64]
        [--canvas 32] [--seed 0] [--shard-gib 4]

ARCH_CONFIG is a DiffusionGemma config.json (deploy/models/diffusiongemma-26b-a4b.config.json for
the full size); the source tensors' names and shapes come from transformers' own
DiffusionGemmaForBlockDiffusion built on the meta device, so nothing of full size is ever held in
bf16, on disk or in memory. TOKENIZER_DIR gives the tokenizer files and the special tokens' ids
(the toy model's). What it is for: memory and speed on a GPU before anyone downloads 52 GB.
Random weights: never a figure of answers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import w4a16

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
)
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id")
Spec = tuple[tuple[int, ...], str]  # shape, dtype name
DTYPES = {"int32": torch.int32, "bfloat16": torch.bfloat16}


def source_tensors(arch: dict[str, Any], tokens: dict[str, Any], canvas: int) -> tuple[dict[str, Spec], Any]:
    """{name: (shape, dtype)} of the bf16 checkpoint this architecture saves (the decoder's copy of
    the shared backbone, no lm_head, no vision tower), and the config to save beside the weights."""
    from transformers import DiffusionGemmaConfig
    from transformers.models.diffusion_gemma.modeling_diffusion_gemma import DiffusionGemmaForBlockDiffusion

    text = {k: v for k, v in arch["text_config"].items() if k not in ("model_type", "_comment")}
    text_tokens = tokens.get("text_config") or tokens
    text |= {k: text_tokens.get(k, tokens[k]) for k in TOKEN_IDS} | {"tie_word_embeddings": True}
    common: dict[str, Any] = {
        "text_config": text,
        **{k: tokens[k] for k in ("boi_token_id", "eoi_token_id", "image_token_id")},
        "canvas_length": canvas,
        "tie_word_embeddings": True,
    }
    # transformers cannot build the model without a vision tower: a throwaway one, never saved.
    throwaway_vision = {
        "model_type": "gemma4_vision", "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 16,
    }  # fmt: skip
    with torch.device("meta"):
        model = DiffusionGemmaForBlockDiffusion(
            DiffusionGemmaConfig(vision_config=throwaway_vision, **common)
        )
    specs = {
        name: (tuple(t.shape), "bfloat16")
        for name, t in model.state_dict().items()
        if "vision" not in name and not name.startswith("model.encoder.") and name != "lm_head.weight"
    }
    config = DiffusionGemmaConfig(vision_config=None, **common)
    config.architectures = ["DiffusionGemmaForBlockDiffusion"]
    config.dtype = "bfloat16"
    for k in TOKEN_IDS:
        setattr(config, k, tokens[k])
    return specs, config


def layout(specs: dict[str, Spec], group_size: int) -> tuple[dict[str, Spec], dict[str, int]]:
    """The output tensors (w4a16's plan of every source tensor) and the parameters by kind."""
    out: dict[str, Spec] = {}
    params = {"experts": 0, "dense_linear": 0, "kept_bf16": 0}
    for name, (shape, dtype) in specs.items():
        packed = w4a16.plan(name, shape)
        if packed is None:
            out[name] = (shape, dtype)
            params["kept_bf16"] += numel(shape)
            continue
        for p in packed:
            w4a16.check_group(p, group_size)
            out |= p.tensors(group_size)
            params[p.kind] += p.out_features * p.in_features
    return out, params


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def shards(tensors: dict[str, Spec], limit: int) -> list[list[str]]:
    """Tensor names cut into files of at most `limit` bytes (a larger tensor gets a file alone)."""
    cut: list[list[str]] = [[]]
    size = 0
    for name, (shape, dtype) in tensors.items():
        nbytes = numel(shape) * (4 if dtype == "int32" else 2)
        if cut[-1] and size + nbytes > limit:
            cut.append([])
            size = 0
        cut[-1].append(name)
        size += nbytes
    return cut


def random_tensor(
    name: str, shape: tuple[int, ...], dtype: str, g: torch.Generator, device: str
) -> torch.Tensor:
    if dtype == "int32":  # eight random int4 values per word
        return torch.randint(-(2**31), 2**31 - 1, shape, dtype=torch.int32, device=device, generator=g)
    if name.endswith(".weight_scale"):  # small positive scales keep activations finite
        return (torch.rand(shape, device=device, generator=g) * 2e-3 + 1e-3).to(torch.bfloat16)
    if "norm" in name or "scale" in name or "scalar" in name:
        return torch.ones(shape, dtype=torch.bfloat16, device=device)
    return (torch.randn(shape, device=device, generator=g) * 0.02).to(torch.bfloat16)


def write(
    out: Path, tensors: dict[str, Spec], shapes: dict[str, list[int]], shard_bytes: int, seed: int
) -> int:
    """Generate and save every tensor, shard by shard; the number of files."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator(device=device).manual_seed(seed)
    files = shards(tensors, shard_bytes)
    weight_map: dict[str, str] = {}
    for i, names in enumerate(files, 1):
        started = time.monotonic()
        file = "model.safetensors" if len(files) == 1 else f"model-{i:05d}-of-{len(files):05d}.safetensors"
        part = {}
        for name in names:
            shape, dtype = tensors[name]
            if name.endswith(".weight_shape"):
                part[name] = torch.tensor(shapes[name], dtype=torch.int32)
            else:
                part[name] = random_tensor(name, shape, dtype, g, device).cpu()
        save_file(part, str(out / file), metadata={"format": "pt"})
        weight_map |= dict.fromkeys(names, file)
        size = (out / file).stat().st_size
        print(
            f"  {file}: {len(names)} tensors, {size / 1e9:.2f} GB in {time.monotonic() - started:.1f} s",
            flush=True,
        )
    if len(files) > 1:
        (out / "model.safetensors.index.json").write_text(
            json.dumps(w4a16.index(weight_map), indent=2) + "\n"
        )
    return len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("arch", type=Path, help="a DiffusionGemma config.json")
    parser.add_argument("tokenizer", type=Path, help="a checkpoint directory with the tokenizer files")
    parser.add_argument("out", type=Path)
    parser.add_argument("--group-size", type=int, default=64, choices=[32, 64])
    parser.add_argument("--canvas", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shard-gib", type=float, default=4.0)
    a = parser.parse_args()
    started = time.monotonic()
    arch = json.loads(a.arch.read_text())
    tokens = json.loads((a.tokenizer / "config.json").read_text())
    specs, config = source_tensors(arch, tokens, a.canvas)
    tensors, params = layout(specs, a.group_size)
    shapes = {
        f"{p.base}.weight_shape": [p.out_features, p.in_features]
        for name, (shape, _) in specs.items()
        for p in (w4a16.plan(name, shape) or [])
    }
    a.out.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"{sum(params.values()) / 1e9:.2f}B parameters into {len(tensors)} tensors on {device}", flush=True)
    files = write(a.out, tensors, shapes, int(a.shard_gib * 2**30), a.seed)
    config.save_pretrained(str(a.out))
    saved = json.loads((a.out / "config.json").read_text())
    saved["quantization_config"] = w4a16.compressed_tensors_config(a.group_size)
    (a.out / "config.json").write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    for name in TOKENIZER_FILES:
        if (a.tokenizer / name).is_file():
            shutil.copy2(a.tokenizer / name, a.out / name)
    (a.out / "README.md").write_text(
        "# DiffusionGemma with random weights (W4A16 layout)\n\n"
        f"Generated by deploy/models/scripts/random_model.py from {a.arch.name} (seed {a.seed}, group "
        f"{a.group_size}, canvas {a.canvas}).\nThe layout of `dgemma quantize`, random weights: for "
        "memory and speed only, never for answers.\n"
    )
    total = sum(p.stat().st_size for p in a.out.glob("*.safetensors"))
    summary = {"params": params, "tensors": len(tensors), "files": files, "bytes": total,
               "seconds": round(time.monotonic() - started, 1), "device": device}  # fmt: skip
    (a.out / "random_model.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
