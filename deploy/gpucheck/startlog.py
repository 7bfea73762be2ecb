"""What a start of `dgemma run` says in its log: vLLM's phases, kernels and moments, the engine's
argv, and the supervisor's compile-cache lines."""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

# What vLLM 0.32's log says of each phase of its start: (key, pattern, group converters).
_PHASES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern))
    for key, pattern in (
        ("vllm_version", r"Initializing a V1 LLM engine \(v(?P<v>[\w.+-]+)\)"),
        ("weights_read_s", r"Loading weights took (?P<v>[\d.]+) seconds"),
        ("weights_gib", r"Model loading took (?P<v>[\d.]+) GiB memory"),
        ("model_load_s", r"Model loading took [\d.]+ GiB memory and (?P<v>[\d.]+) seconds"),
        ("dynamo_s", r"Dynamo bytecode transform time: (?P<v>[\d.]+) s"),
        ("compile_s", r"torch\.compile took (?P<v>[\d.]+) s in total"),
        ("warmup_s", r"Initial profiling/warmup run took (?P<v>[\d.]+) s"),
        ("kv_gib", r"reserved (?P<v>[\d.]+) GiB memory for KV Cache"),
        ("kv_gib", r"Available KV cache memory: (?P<v>[\d.]+) GiB"),
        ("kv_tokens", r"GPU KV cache size: (?P<v>[\d,]+) tokens"),
        ("graphs_s", r"Graph capturing finished in (?P<v>[\d.]+) secs"),
        ("graphs_gib", r"Graph capturing finished in [\d.]+ secs, took (?P<v>[\d.]+) GiB"),
        ("init_engine_s", r"init engine \(profile, create kv cache, warmup model\) took (?P<v>[\d.]+) s"),
        # The largest step that runs as a CUDA graph, from the config vLLM prints at start.
        ("max_capture_size", r"'max_cudagraph_capture_size': (?P<v>\d+)"),
        # The supervisor's compile cache (deploy/runtime/compile_cache.py) and its engine warm-up.
        ("cache_restore_s", r"compile cache hit: \d+ files, [\d.]+ MB in (?P<v>[\d.]+) s"),
        ("cache_mb", r"compile cache (?:hit|saved): \d+ files, (?P<v>[\d.]+) MB"),
        ("cache_save_s", r"compile cache saved: \d+ files, [\d.]+ MB in (?P<v>[\d.]+) s"),
        ("warmup_decision_s", r"engine warm-up: a first decision in (?P<v>[\d.]+) s"),
    )
)
# The supervisor's last word on a compile-cache save (saved, nothing to save, lost a race, failed).
_SAVED = re.compile(r"compile cache (saved|not saved|.* was saved by another|save to .* failed)")
# The kernels vLLM chose, as it names them.
_KERNELS = (
    ("linear", re.compile(r"Using (?P<v>\w+) for CompressedTensorsWNA16")),
    ("moe", re.compile(r"Using '(?P<v>\w+)' WNA16 MoE backend")),
    ("experts", re.compile(r"^Using (?P<v>\w+Experts)$")),
    ("attention", re.compile(r"Using AttentionBackendEnum\.(?P<v>\w+) backend")),
)
# Moments of the start, by the first line that says so (seconds from the spawn).
_MOMENTS = (
    ("weights verified", re.compile(r"^weights ready in")),
    ("caches restored", re.compile(r"^compile cache hit")),
    ("engine started", re.compile(r"^started engine")),
    ("engine core up", re.compile(r"Initializing a V1 LLM engine")),
    ("weights on the GPU", re.compile(r"Model loading took")),
    ("compiled", re.compile(r"torch\.compile took|Initial profiling/warmup run took")),
    ("KV cache", re.compile(r"GPU KV cache size")),
    ("graphs captured", re.compile(r"Graph capturing finished")),
    ("engine ready", re.compile(r"init engine \(profile")),
    ("warm-up decision", re.compile(r"^engine warm-up: a first decision")),
    ("gateway started", re.compile(r"^started gateway")),
)


def parse_start_log(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """Phases, kernels, moments and the engine's argv from a start's log: (seconds since the spawn,
    the line) pairs, each line one of the supervisor's JSON lines (vLLM's relayed) or plain text."""
    phases: dict[str, Any] = {}
    kernels: dict[str, str] = {}
    moments: dict[str, float] = {}
    argv: list[str] = []
    for t, raw in lines:
        message, record = raw, None
        if raw.startswith("{"):
            try:
                record = json.loads(raw)
                message = str(record.get("message", ""))
            except ValueError:
                pass
        for key, pattern in _PHASES:
            m = pattern.search(message)
            if m and key not in phases:
                v = m["v"].replace(",", "")
                phases[key] = v if key == "vllm_version" else float(v)
        for key, pattern in _KERNELS:
            m = pattern.search(message)
            if m:
                kernels.setdefault(key, m["v"])
        for name, pattern in _MOMENTS:
            if name not in moments and pattern.search(message):
                moments[name] = round(t, 1)
        if record and message.startswith("started engine") and isinstance(record.get("argv"), list):
            argv = [str(a) for a in record["argv"]]
    return {"phases": phases, "kernels": kernels, "moments": moments, "engine_argv": argv}


def cache_save_ended(lines: list[tuple[float, str]]) -> bool:
    """Whether the supervisor has said its last word on a compile-cache save."""
    return any(_SAVED.search(line) for _, line in lines)


def short(line: str, limit: int = 140) -> str:
    """A log line's message (a JSON line's own), cut to `limit` characters."""
    if line.startswith("{"):
        with contextlib.suppress(ValueError):
            line = str(json.loads(line).get("message", line))
    return line if len(line) <= limit else line[: limit - 1] + "…"
