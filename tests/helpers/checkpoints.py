"""Checkpoints without torch, for the deploy's input checks: DiffusionGemma's tensors for any
config.json (names and shapes as transformers saves them, held to the toy's own file by
tests/deploy/cloud/test_inputs.py), in bf16 or in the W4A16 layout `dgemma quantize` writes
(deploy/models/scripts/w4a16.py), written as safetensors with random or sparse data."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from deploy.models import SCRIPTS
from deploy.runtime.gpu_budget import Arch

Specs = dict[str, tuple[tuple[int, ...], str]]  # name: (shape, safetensors dtype)
BYTES = {"BF16": 2, "I32": 4}
NORMS = (
    "input_layernorm",
    "post_attention_layernorm",
    "post_feedforward_layernorm",
    "post_feedforward_layernorm_1",
    "post_feedforward_layernorm_2",
    "pre_feedforward_layernorm",
    "pre_feedforward_layernorm_2",
)


@functools.cache
def _w4a16() -> ModuleType:
    """The layout's own module (a script of the engine's python, standard library only)."""
    spec = importlib.util.spec_from_file_location("w4a16", SCRIPTS / "w4a16.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def bf16_tensors(config: dict[str, Any]) -> Specs:
    """The tensors transformers saves for this DiffusionGemma (the decoder's copy of the backbone)."""
    a = Arch.from_config(config)
    h, e, i, inter = a.hidden, a.experts, a.moe_intermediate, a.intermediate
    specs: dict[str, tuple[int, ...]] = {"model.decoder.embed_tokens.weight": (a.vocab, h)}
    for n, kind in enumerate(a.layer_types):
        full = kind == "full_attention"  # no v_proj: its values are the keys
        hd, kv = (a.global_head_dim, a.global_kv_heads) if full else (a.head_dim, a.kv_heads)
        layer: dict[str, tuple[int, ...]] = {
            "experts.down_proj": (e, h, i),
            "experts.gate_up_proj": (e, 2 * i, h),
            "layer_scalar": (1,),
            "mlp.down_proj.weight": (h, inter),
            "mlp.gate_proj.weight": (inter, h),
            "mlp.up_proj.weight": (inter, h),
            "router.per_expert_scale": (e,),
            "router.proj.weight": (e, h),
            "router.scale": (h,),
            "self_attn.k_norm.weight": (hd,),
            "self_attn.k_proj.weight": (kv * hd, h),
            "self_attn.o_proj.weight": (h, a.heads * hd),
            "self_attn.q_norm.weight": (hd,),
            "self_attn.q_proj.weight": (a.heads * hd, h),
            **({} if full else {"self_attn.v_proj.weight": (kv * hd, h)}),
            **{f"{norm}.weight": (h,) for norm in NORMS},
        }
        specs |= {f"model.decoder.layers.{n}.{name}": shape for name, shape in layer.items()}
    specs |= {
        "model.decoder.norm.weight": (h,),
        "model.decoder.self_conditioning.down_proj.weight": (h, inter),
        "model.decoder.self_conditioning.gate_proj.weight": (inter, h),
        "model.decoder.self_conditioning.pre_norm.weight": (h,),
        "model.decoder.self_conditioning.up_proj.weight": (inter, h),
    }
    return {name: (shape, "BF16") for name, shape in specs.items()}


def w4a16_tensors(config: dict[str, Any], group_size: int = 64) -> Specs:
    """The same model in the W4A16 layout, by the layout's own plan."""
    layout = _w4a16()
    dtypes = {"int32": "I32", "bfloat16": "BF16"}
    specs: Specs = {}
    for name, (shape, dtype) in bf16_tensors(config).items():
        packed = layout.plan(name, shape)
        if packed is None:
            specs[name] = (shape, dtype)
            continue
        for p in packed:
            specs |= {n: (s, dtypes[d]) for n, (s, d) in p.tensors(group_size).items()}
    return specs


def write_safetensors(path: Path, specs: Specs, *, sparse: bool = False) -> None:
    """A safetensors file of these tensors: random data, or (`sparse`) a hole of the right size."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    at = 0
    for name, (shape, dtype) in specs.items():
        size = math.prod(shape) * BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + size]}
        at += size
    raw = json.dumps(header).encode()
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        if sparse:
            f.truncate(8 + len(raw) + at)
        else:
            f.write(os.urandom(at))


def w4a16_checkpoint(
    root: Path, config: dict[str, Any], *, group_size: int = 64, sparse: bool = False
) -> Path:
    """A W4A16 checkpoint of this architecture as `dgemma quantize` lays it out, its config saying so."""
    root.mkdir(parents=True, exist_ok=True)
    quantized = {**config, "quantization_config": _w4a16().compressed_tensors_config(group_size)}
    (root / "config.json").write_text(json.dumps(quantized))
    write_safetensors(root / "model.safetensors", w4a16_tensors(config, group_size), sparse=sparse)
    return root
