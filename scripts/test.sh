#!/usr/bin/env bash
# Lint, then every test. Tests marked `engine` run against the real vLLM (CPU) started by the
# session fixture. pytest's exit 5 (no tests collected) means the setup is broken: fail on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/lint.sh
set +e
# A worker per core (pytest-xdist); tests/conftest.py groups the tests so that each heavy resource
# starts once (tests/README.md). PYTEST_WORKERS=0: one process. Where the time went, and the
# slowest: below the results (tests/helpers/timing.py).
.venv/bin/python -m pytest -q -ra -n "${PYTEST_WORKERS:-auto}" --dist loadgroup "$@"
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: the test setup is broken" >&2
  exit 1
fi
exit "$code"
