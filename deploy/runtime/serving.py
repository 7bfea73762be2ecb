"""Each GPU's serving defaults: what `EngineSettings` sizes the engine with on it unless told, and
the CUDA-graph cap that follows them. A leaf: the settings and the fit both read it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuServing:
    """A GPU's serving defaults: what `EngineSettings` sizes the engine with on it unless told."""

    max_num_seqs: int
    max_num_batched_tokens: int
    replicas: int = 1  # engines on the one GPU


# Measured on one H200 through the gateway (docs/engine-sizing-h200): more seqs made each engine step
# slower (48 seqs: 0.60x the decisions per second of 32 at 32 clients, 8.7 steps/s against 21.6, and
# 56 ms against 32 ms at one client), and 128 seqs with 8192 batched tokens did not start (its
# 8192-token CUDA graph hit an illegal memory access at capture). So every GPU keeps the l4's batch,
# the 80+ GiB ones sized against their own memory rather than held to the L4's; on an H100
# unmeasured.
BATCH = GpuServing(max_num_seqs=32, max_num_batched_tokens=4096)
# One engine's step loop, not the H200, is its limit (GPU ~50 % busy): two engines on it gave
# 1.20-1.38x the req/s of one at 32-128 clients through `dgemma run` (docs/engine-sizing-h200, run 4).
SERVING: dict[str, GpuServing] = {
    **dict.fromkeys(("l4", "a100-40gb", "h100-80gb"), BATCH),
    "h200": dataclasses.replace(BATCH, replicas=2),
}
# The largest CUDA graph the derived cap asks for: 2048 and 3072 captured and served on the H200, 8192
# crashed at capture (8192 x the 262,144-token vocab is 2^31 logits, an int32 index's limit: the
# suspect, not established); 4096 is below that, never captured yet.
MAX_GRAPH_TOKENS = 4096


def graph_capture_size(max_num_seqs: int, canvas: int, max_num_batched_tokens: int) -> int:
    """The largest step to run as a CUDA graph: each read's canvas plus as many new prompt tokens
    (2048 at 32 seqs held every step of docs/engine-arms-h200 in graphs), at most vLLM's batch and
    `MAX_GRAPH_TOKENS`."""
    return min(max_num_seqs * 2 * canvas, max_num_batched_tokens, MAX_GRAPH_TOKENS)


def canvas_capture_sizes(max_num_seqs: int, canvas: int, cap: int) -> list[int]:
    """The step sizes worth a CUDA graph under this profile, in place of vLLM's 147 at a 2048 cap
    (1, 2, 4, then every 8 to 256 and every 16 to the cap; each costs ~0.1 s of every start,
    docs/cold-start-h200). Steps up to 256 tokens keep vLLM's 8-token spacing (one read's step is
    ~33 tokens: the latency path); above, every canvas to a full batch of reads (seqs x canvas),
    then every two canvases to the cap. A step pads to the next size: above 256 tokens by at most a
    canvas, against vLLM's 16."""
    small = [size for size in (1, 2, 4, *range(8, 257, 8)) if size <= cap]
    reads = range(256 + canvas, min(max_num_seqs * canvas, cap) + 1, canvas)
    mixed = range(max_num_seqs * canvas + 2 * canvas, cap + 1, 2 * canvas)
    return sorted({*small, *reads, *mixed, cap})
