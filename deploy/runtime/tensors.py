"""A checkpoint's tensors as its safetensors headers list them, read without torch, and held against
the architecture its config.json describes (what `dgemma fit` counts).

A safetensors file is an 8-byte little-endian length, that many bytes of JSON (each tensor's
dtype, shape and byte range in the data), then the data. The checks are the format's own (as the
`safetensors` library makes them when it opens a file) and the architecture's: every layer present,
the embedding's and the experts' shapes, the parameters of each kind `Arch.inventory` counts, and
the total size `weight_bytes` computes. A problem is one line naming the file: ValueError.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from deploy.runtime.gpu_budget import Arch, Scheme, weight_bytes

# Bits per element of each safetensors dtype.
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64,
}  # fmt: skip
MAX_HEADER_BYTES = 100_000_000  # the safetensors library refuses a longer header
INDEX = "model.safetensors.index.json"
# Kept beside the text model and not sized by `fit`: the published checkpoint's vision tower.
TOWER = re.compile(r"vision|audio")
# Neither parameters nor quantization data: transformers saves each layer's scalar as a buffer.
BUFFERS = (".layer_scalar",)
# compressed-tensors' data beside a packed weight: its scales and shape, not parameters.
QUANT_AUX = (".weight_scale", ".weight_shape", ".weight_zero_point", ".weight_g_idx")
PACKED = ".weight_packed"  # int32, eight 4-bit weights each
SIZE_TOLERANCE = 0.01  # buffers and the packed weights' shapes, beside what `weight_bytes` sizes
_LAYER = re.compile(r"\.layers\.(\d+)\.")
_EXPERT = re.compile(r"\.experts\.(\d+)\.(gate|up|down)_proj\.weight_packed$")
KINDS = {
    "experts": "expert",
    "dense_linear": "dense linear",
    "embedding": "embedding",
    "self_conditioning": "self-conditioning",
    "router_norm": "router and norm",
}


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    file: str


def read_header(path: Path) -> list[Tensor]:
    """The tensors of one safetensors file, checked as the format requires (a header that parses,
    known dtypes, byte ranges that match the shapes and fill the data exactly)."""
    size = path.stat().st_size
    if size < 8:
        raise ValueError(
            f"{path.name}: {size} bytes, not a safetensors file (an 8-byte header length, then the header)"
        )
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        if length == 0 or length > MAX_HEADER_BYTES or 8 + length > size:
            raise ValueError(
                f"{path.name}: its first 8 bytes give a header of {length} bytes in a file of {size}: "
                "not a safetensors file, or one cut short"
            )
        raw = f.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{path.name}: its header is not JSON ({e})") from e
    if not isinstance(header, dict):
        raise ValueError(f"{path.name}: its header is not a JSON object")
    tensors, ranges = [], []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape = str(entry["dtype"]), tuple(int(n) for n in entry["shape"])
            start, end = (int(n) for n in entry["data_offsets"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{path.name}: tensor {name!r} has no dtype, shape and data_offsets") from e
        if dtype not in DTYPE_BITS or any(n < 0 for n in shape):
            raise ValueError(f"{path.name}: tensor {name!r} is {dtype} {list(shape)}: not a dtype or shape")
        need = math.prod(shape) * DTYPE_BITS[dtype] // 8
        if end - start != need:
            raise ValueError(
                f"{path.name}: tensor {name!r} ({dtype} {list(shape)}, {need} bytes) spans bytes "
                f"{start} to {end}"
            )
        tensors.append(Tensor(name, dtype, shape, need, path.name))
        ranges.append((start, end, name))
    if not tensors:
        raise ValueError(f"{path.name}: holds no tensors")
    at = 0
    for start, end, name in sorted(ranges):
        if start != at:
            raise ValueError(f"{path.name}: tensor {name!r} starts at byte {start} of the data, not {at}")
        at = end
    data = size - 8 - length
    if at != data:
        raise ValueError(
            f"{path.name}: the header's tensors take {at} bytes, the file holds {data} after the header"
            + (" (cut short?)" if at > data else "")
        )
    return tensors


def read_tensors(directory: Path) -> dict[str, Tensor]:
    """Every tensor of a checkpoint's *.safetensors files, by name; the index, when there is one,
    must name the file each one is in."""
    found: dict[str, Tensor] = {}
    for path in sorted(directory.glob("*.safetensors")):
        for t in read_header(path):
            if t.name in found:
                raise ValueError(f"{path.name}: tensor {t.name!r} is also in {found[t.name].file}")
            found[t.name] = t
    index = directory / INDEX
    if index.is_file():
        try:
            weight_map = dict(json.loads(index.read_text())["weight_map"])
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{INDEX}: no readable weight_map ({type(e).__name__})") from e
        for name, file in weight_map.items():
            if name not in found or found[name].file != file:
                where = f"is in {found[name].file}" if name in found else "is in no file"
                raise ValueError(f"{INDEX}: puts {name!r} in {file}, but it {where}")
    return found


def kind_of(name: str, ndim: int) -> str | None:
    """The `Arch.inventory` kind a tensor's parameters count under; None for what it does not count
    (a tower, a buffer, quantization scales)."""
    if TOWER.search(name) or name.endswith(BUFFERS) or name.endswith(QUANT_AUX):
        return None
    if ".experts." in name:
        return "experts"
    if "embed" in name:
        return "embedding"
    if "self_conditioning" in name and ndim == 2:
        return "self_conditioning"
    if ndim == 2 and "router" not in name:
        return "dense_linear"
    return "router_norm"


def parameters(tensors: dict[str, Tensor]) -> dict[str, int]:
    """Parameters by kind, as `Arch.inventory` counts them (a packed weight holds eight)."""
    counted = dict.fromkeys(KINDS, 0)
    for t in tensors.values():
        kind = kind_of(t.name, len(t.shape))
        if kind is not None:
            counted[kind] += math.prod(t.shape) * (8 if t.name.endswith(PACKED) else 1)
    return counted


def _files(tensors: dict[str, Tensor]) -> str:
    files = sorted({t.file for t in tensors.values()})
    return ", ".join(files) if len(files) <= 2 else f"the {len(files)} shards"


def _expert_shape(name: str, arch: Arch) -> tuple[int, ...] | None:
    """The shape a tensor of the experts must have, in either layout (fused bf16, or per expert
    and packed); None for one whose shape is not fixed here (scales, shapes)."""
    e, i, h = arch.experts, arch.moe_intermediate, arch.hidden
    if name.endswith(".experts.gate_up_proj"):
        return (e, 2 * i, h)
    if name.endswith(".experts.down_proj"):
        return (e, h, i)
    packed = _EXPERT.search(name)
    if packed:
        return (h, i // 8) if packed[2] == "down" else (i, h // 8)
    return None


def check_contents(directory: Path, arch: Arch, scheme: Scheme, group_size: int) -> None:
    """The checkpoint's tensors are the architecture's: each layer, the embedding's and the experts'
    shapes, every kind's parameters and the total size, as `dgemma fit` computes them."""
    tensors = read_tensors(directory)
    text = {n: t for n, t in tensors.items() if not TOWER.search(n)}
    files = _files(text or tensors)
    layers = {int(m[1]) for n in text if (m := _LAYER.search(n))}
    wanted = set(range(len(arch.layer_types)))
    if layers != wanted:
        missing, extra = sorted(wanted - layers), sorted(layers - wanted)
        said = f"no tensors of layers {missing[:5]}" if missing else f"tensors of layers {extra[:5]}"
        raise ValueError(f"{files}: {said}, where config.json has {len(wanted)} layers")
    embedding = (arch.vocab, arch.hidden)
    embeds = [t for t in text.values() if kind_of(t.name, len(t.shape)) == "embedding"]
    if not any(t.shape == embedding for t in embeds):
        shapes = ", ".join(f"{t.name} {list(t.shape)}" for t in embeds[:2]) or "none"
        raise ValueError(f"{files}: no embedding of {list(embedding)} (vocab x hidden): {shapes}")
    for t in text.values():
        shape = _expert_shape(t.name, arch)
        if shape is not None and t.shape != shape:
            raise ValueError(
                f"{t.file}: {t.name} is {list(t.shape)}, config.json's experts make it {list(shape)}"
            )
    counted, inventory = parameters(text), arch.inventory()
    for kind, label in KINDS.items():
        if counted[kind] != inventory[kind]:
            raise ValueError(
                f"{files}: {counted[kind]:,} {label} parameters, where config.json's architecture has "
                f"{inventory[kind]:,} (`dgemma fit`)"
            )
    stored = sum(t.nbytes for t in text.values())
    expected = sum(weight_bytes(arch, scheme, group_size).values())
    if abs(stored - expected) > SIZE_TOLERANCE * expected:
        raise ValueError(
            f"{files}: {stored:,} bytes of text-model tensors, where `dgemma fit` computes "
            f"{expected:,.0f} for config.json's architecture in {scheme}"
            + (f" (group size {group_size})" if scheme == "w4a16" else "")
        )
