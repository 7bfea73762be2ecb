#!/usr/bin/env bash
# Lint, then every test. Tests marked `engine` run against the real vLLM (CPU) started by the
# session fixture. pytest's exit 5 (no tests collected) means the setup is broken: fail on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/lint.sh
set +e
# One process by default: on CI's 2 cores the suite is CPU-bound, and pytest-xdist's 2 workers
# measured no faster and failed tests that have timing windows (tests/README.md). PYTEST_WORKERS=N
# runs N workers, each file's tests on one (`--dist loadfile`: module fixtures start once), for a
# machine with cores to spare. Where the time went, and the slowest: below the results.
if [ "${PYTEST_WORKERS:-0}" != 0 ]; then
  set -- -n "$PYTEST_WORKERS" --dist loadfile "$@"
fi
.venv/bin/python -m pytest -q -ra "$@"
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: the test setup is broken" >&2
  exit 1
fi
exit "$code"
