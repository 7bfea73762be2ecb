#!/usr/bin/env bash
# Static checks, exactly as CI runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
set -x
$BIN/ruff check .
$BIN/ruff format --check .
$BIN/mypy
$BIN/python scripts/gen_docs.py --check
