#!/usr/bin/env bash
# Lint, then every test. Tests marked `engine` run against the real vLLM (CPU) started by the
# session fixture. pytest's exit 5 (no tests collected) means the setup is broken: fail on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/lint.sh
set +e
.venv/bin/python -m pytest -q -ra "$@"  # the slowest, and where the time went: tests/helpers/timing.py
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: the test setup is broken" >&2
  exit 1
fi
exit "$code"
