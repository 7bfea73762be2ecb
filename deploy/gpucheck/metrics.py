"""vLLM's /metrics as the GPU check reads them: its counters and gauges, and its engine steps."""

from __future__ import annotations

from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families


def engine_counters(text: str) -> dict[str, float]:
    """vLLM's /metrics: the counters and gauges the report reads (summed over label sets), and its
    engine steps: `steps` and `step_tokens` (the count and sum of `vllm:iteration_tokens_total`, one
    observation per step) and `steps_le_N` (steps of at most N tokens, the histogram's buckets)."""
    wanted = {
        "vllm:prefix_cache_queries": "prefix_cache_queries",
        "vllm:prefix_cache_hits": "prefix_cache_hits",
        "vllm:num_requests_running": "running",
        "vllm:num_requests_waiting": "waiting",
        "vllm:kv_cache_usage_perc": "kv_usage",
        "vllm:prompt_tokens": "prompt_tokens",
        "vllm:request_success": "requests_finished",
    }
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        name = family.name.removesuffix("_total")  # without a TYPE line the suffix stays
        if name == "vllm:iteration_tokens":
            _step_histogram(family.samples, out)
            continue
        key = wanted.get(name)
        if key is None:
            continue
        out[key] = out.get(key, 0.0) + sum(s.value for s in family.samples if not s.name.endswith("_created"))
    return out


def engines_counters(engine_urls: list[str], http: httpx.Client | None = None) -> dict[str, float]:
    """`engine_counters` of each engine on the GPU (`engine_replicas`), added up: the KV cache's use
    is the fullest engine's, as each engine has its own."""
    total: dict[str, float] = {}
    for url in engine_urls:
        page = (http.get(f"{url}/metrics") if http else httpx.get(f"{url}/metrics", timeout=10)).text
        for k, v in engine_counters(page).items():
            total[k] = max(total.get(k, 0.0), v) if k == "kv_usage" else total.get(k, 0.0) + v
    return total


def _step_histogram(samples: list[Any], out: dict[str, float]) -> None:
    for s in samples:
        if s.name.endswith("_count"):
            key = "steps"
        elif s.name.endswith("_sum"):
            key = "step_tokens"
        elif s.name.endswith("_bucket") and s.labels.get("le") not in (None, "+Inf"):
            key = f"steps_le_{float(s.labels['le']):.0f}"
        else:
            continue
        out[key] = out.get(key, 0.0) + s.value
