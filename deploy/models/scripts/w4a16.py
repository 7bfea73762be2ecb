"""The W4A16 checkpoint layout: one source for what `dgemma quantize` writes and what `dgemma model
random` generates (tensor names, shapes, dtypes, and the compressed-tensors config vLLM reads).

DiffusionGemma stores each layer's experts as two fused 3-D tensors (`experts.gate_up_proj`
[E, 2I, H], gate rows first; `experts.down_proj` [E, H, I]). Every expert is written per expert
under the names vLLM's fused-MoE loader maps onto its w13/w2 parameters
(`experts.{e}.gate_proj|up_proj|down_proj.weight_packed|weight_scale|weight_shape`), and so is every
dense linear. Kept in bf16: embeddings (tied lm_head), routers, norms and scales, any vision tower,
and the self-conditioning MLP (vLLM 0.32 builds it from plain nn.Linear, which takes no packed
weights: found by serving a quantized tiny model).

Imports only the standard library: the random generator and the quantizer bring torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

FUSED_EXPERTS = re.compile(r"^(?P<prefix>.*\.experts)\.(?P<kind>gate_up_proj|down_proj)$")
KEEP = re.compile(r"(embed|router|vision|lm_head|self_conditioning)")
PACKED_SUFFIXES = ("weight_packed", "weight_scale", "weight_shape")
Kind = Literal["experts", "dense_linear"]


@dataclass(frozen=True)
class Packed:
    """One [out, in] linear written as pack-quantized int4: where it comes from in the source
    tensor (`expert` and `half` of a fused expert tensor) and where it goes."""

    base: str  # output name without the suffix, e.g. `...experts.3.up_proj`
    out_features: int
    in_features: int
    kind: Kind
    expert: int | None = None
    half: Literal["gate", "up"] | None = None  # of a fused gate_up tensor

    def tensors(self, group_size: int) -> dict[str, tuple[tuple[int, ...], str]]:
        """{output name: (shape, dtype)} of the three tensors compressed-tensors writes."""
        return {
            f"{self.base}.weight_packed": ((self.out_features, self.in_features // 8), "int32"),
            f"{self.base}.weight_scale": ((self.out_features, self.in_features // group_size), "bfloat16"),
            f"{self.base}.weight_shape": ((2,), "int32"),
        }


def plan(name: str, shape: tuple[int, ...]) -> list[Packed] | None:
    """The packed linears a source tensor becomes; None when it is kept as it is (bf16)."""
    fused = FUSED_EXPERTS.match(name)
    if fused:
        prefix, experts = fused["prefix"], shape[0]
        if fused["kind"] == "gate_up_proj":
            half_rows, hidden = shape[1] // 2, shape[2]
            return [
                Packed(f"{prefix}.{e}.{half}_proj", half_rows, hidden, "experts", e, half)
                for e in range(experts)
                for half in ("gate", "up")
            ]
        return [Packed(f"{prefix}.{e}.down_proj", shape[1], shape[2], "experts", e) for e in range(experts)]
    if len(shape) == 2 and name.endswith(".weight") and not KEEP.search(name):
        return [Packed(name.removesuffix(".weight"), shape[0], shape[1], "dense_linear")]
    return None


def check_group(packed: Packed, group_size: int) -> None:
    if packed.in_features % group_size or packed.in_features % 8:
        raise ValueError(
            f"group size {group_size} does not divide the input width {packed.in_features} of {packed.base}"
        )


def compressed_tensors_config(group_size: int) -> dict[str, Any]:
    """The `quantization_config` vLLM reads: symmetric int4, one bf16 scale per group, packed."""
    return {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "quantization_status": "compressed",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "format": "pack-quantized",
                "weights": {
                    "num_bits": 4,
                    "type": "int",
                    "symmetric": True,
                    "strategy": "group",
                    "group_size": group_size,
                    "dynamic": False,
                    "observer": "minmax",
                },
                "input_activations": None,
                "output_activations": None,
            }
        },
        "ignore": [
            "lm_head",
            "re:.*embed_tokens.*",
            "re:.*router.*",
            "re:.*vision.*",
            "re:.*self_conditioning.*",
        ],
        "kv_cache_scheme": None,
    }


def index(weight_map: dict[str, str]) -> dict[str, Any]:
    """`model.safetensors.index.json` of a sharded checkpoint."""
    return {"metadata": {}, "weight_map": dict(sorted(weight_map.items()))}
