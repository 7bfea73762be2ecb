"""W4A16 DiffusionGemma in compressed-tensors format with *every* expert quantized.

Usage (with a python that has torch, safetensors and compressed-tensors, e.g. the engine's):
    python deploy/models/scripts/quantize.py SRC DST [--group-size 64]

Why our own pass: DiffusionGemma stores each layer's experts as two fused 3-D tensors (about 90 %
of the weights). Stock llm-compressor and modelopt flows only see nn.Linear modules, so they leave
these in bf16. Here every expert is split out and quantized, with every dense linear, in the
layout `w4a16.py` defines (names, shapes, dtypes, config), which `dgemma model random` also writes.

Method: round-to-nearest, symmetric int4, one bf16 scale per group of `--group-size` input
columns (32 or 64: the expert width 704 = 11 x 64 is not a multiple of 128), computed, quantized
and packed with compressed-tensors' own functions (the format vLLM reads). RTN needs no
calibration data; GPTQ/AWQ would lower the error further. The report (`quantization_report.json`)
holds the inventory, sizes and reconstruction errors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import torch
from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32, unpack_from_int32
from compressed_tensors.quantization import QuantizationArgs
from compressed_tensors.quantization.lifecycle.forward import dequantize, quantize
from compressed_tensors.quantization.utils.helpers import calculate_qparams
from safetensors import safe_open
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import w4a16


def quant_args(group_size: int) -> QuantizationArgs:
    return QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=group_size)


def quantize_linear(w: torch.Tensor, args: QuantizationArgs) -> dict[str, torch.Tensor]:
    """One [out, in] weight -> compressed-tensors pack-quantized tensors."""
    out_f, in_f = w.shape
    g = int(args.group_size or in_f)
    if in_f % g:
        raise SystemExit(f"group size {g} does not divide the input width {in_f}")
    w32 = w.to(torch.float32)
    grouped = w32.reshape(out_f, in_f // g, g)
    scale, zero = calculate_qparams(grouped.amin(dim=2), grouped.amax(dim=2), args)
    q = quantize(w32, scale, zero, args, dtype=torch.int8)
    return {
        "weight_packed": pack_to_int32(q, 4),
        "weight_scale": scale.to(torch.bfloat16),
        "weight_shape": torch.tensor([out_f, in_f], dtype=torch.int32),
    }


def dequantize_linear(t: dict[str, torch.Tensor], args: QuantizationArgs) -> torch.Tensor:
    shape = torch.Size(t["weight_shape"].tolist())
    q = unpack_from_int32(t["weight_packed"], 4, shape)
    return dequantize(q, t["weight_scale"].to(torch.float32), args=args, dtype=torch.float32)


def relative_error(original: torch.Tensor, restored: torch.Tensor) -> float:
    o = original.to(torch.float32)
    return float(torch.linalg.vector_norm(o - restored) / torch.linalg.vector_norm(o).clamp_min(1e-12))


class Report:
    def __init__(self) -> None:
        self.params: dict[str, int] = {"experts": 0, "dense_linear": 0, "kept_bf16": 0}
        self.tensors: dict[str, int] = {"experts": 0, "dense_linear": 0, "kept_bf16": 0}
        self.linear_kept: dict[str, int] = {}  # 2-D weights left in bf16, by name
        self.errors: dict[str, list[float]] = {"experts": [], "dense_linear": []}
        self.expert_tensors_unquantized: list[str] = []

    def add(self, kind: str, numel: int, error: float | None = None) -> None:
        self.params[kind] += numel
        self.tensors[kind] += 1
        if error is not None:
            self.errors[kind].append(error)

    def summary(self, src_bytes: int, dst_bytes: int, group_size: int) -> dict[str, Any]:
        quantized = self.params["experts"] + self.params["dense_linear"]
        kept_experts = sum(n for name, n in self.linear_kept.items() if ".experts." in name)
        return {
            "method": f"RTN symmetric int4, group {group_size}, bf16 scales, pack-quantized",
            "params": self.params,
            "tensors": self.tensors,
            "expert_share_of_params": self.params["experts"] / max(1, sum(self.params.values())),
            "expert_params_quantized_share": self.params["experts"]
            / max(1, self.params["experts"] + kept_experts),
            "expert_tensors_left_unquantized": self.expert_tensors_unquantized,
            "linear_weights_kept_bf16": self.linear_kept,
            "quantized_share_of_all_params": quantized / max(1, sum(self.params.values())),
            "relative_error": {
                k: {"max": max(v), "mean": sum(v) / len(v)} for k, v in self.errors.items() if v
            },
            "bytes": {"source": src_bytes, "quantized": dst_bytes, "ratio": dst_bytes / src_bytes},
        }


def convert(src: Path, dst: Path, group_size: int) -> dict[str, Any]:
    args = quant_args(group_size)
    dst.mkdir(parents=True, exist_ok=True)
    shards = sorted(src.glob("*.safetensors"))
    if not shards:
        raise SystemExit(f"no .safetensors files in {src}")
    report = Report()
    weight_map: dict[str, str] = {}
    for shard in shards:
        out: dict[str, torch.Tensor] = {}
        with safe_open(str(shard), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open is not a dict)
                t = f.get_tensor(name)
                packed = w4a16.plan(name, tuple(t.shape))
                if packed is None:
                    if ".experts." in name:
                        report.expert_tensors_unquantized.append(name)
                    if t.dim() >= 2:
                        report.linear_kept[name] = t.numel()
                    report.add("kept_bf16", t.numel())
                    out[name] = t
                    continue
                for p in packed:
                    w = source_weight(t, p)
                    q = quantize_linear(w, args)
                    report.add(p.kind, w.numel(), relative_error(w, dequantize_linear(q, args)))
                    out.update({f"{p.base}.{k}": v for k, v in q.items()})
        save_file(out, str(dst / shard.name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(out, shard.name))
    if len(shards) > 1:
        index = w4a16.index(weight_map)
        (dst / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    for extra in src.iterdir():
        if extra.is_file() and extra.suffix != ".safetensors" and extra.name not in (
            "config.json", "model.safetensors.index.json", "manifest.json",
        ):  # fmt: skip
            shutil.copy2(extra, dst / extra.name)
    config = json.loads((src / "config.json").read_text())
    config["quantization_config"] = w4a16.compressed_tensors_config(group_size)
    (dst / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    src_bytes = sum(p.stat().st_size for p in shards)
    dst_bytes = sum(p.stat().st_size for p in dst.glob("*.safetensors"))
    summary = report.summary(src_bytes, dst_bytes, group_size)
    (dst / "quantization_report.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def source_weight(t: torch.Tensor, p: w4a16.Packed) -> torch.Tensor:
    """The [out, in] weight `p` takes from its source tensor (one half of one fused expert, or all)."""
    if p.expert is None:
        return t
    w = t[p.expert]
    if p.half is not None:
        w = w.chunk(2, dim=0)[0 if p.half == "gate" else 1]
    return w.contiguous()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--group-size", type=int, default=64, choices=[32, 64])
    a = parser.parse_args()
    summary = convert(a.src, a.dst, a.group_size)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
