"""Model preparation, on the operator's machine (or a GPU host): checkpoints made here
(`checkpoints.py`), and `scripts/` that the engine's python runs (torch, transformers, vLLM): the
W4A16 layout and quantizer, the random and tiny models, the toy's task and training, vLLM's layout
check. The data beside them: the 26B-A4B's config and the trained toy checkpoint."""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent
SCRIPTS = MODELS_DIR / "scripts"  # run by the engine's python, never imported by the kit
TOY_DIR = MODELS_DIR / "dgemma-toy-alerts"  # the trained toy (its tokenizer serves the random model)
