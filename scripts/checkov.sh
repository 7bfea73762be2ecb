#!/usr/bin/env bash
# Static security checks of the Terraform: checkov, offline, with this project's checks
# (tests/terraform/checkov, ids CKV_DGEMMA_*). Exits non-zero on any failed check or parse error.
#
# Usage: scripts/checkov.sh [DIR] [CHECKOV_ARGS...]    DIR defaults to terraform/ at the repo root.
#   CHECKOV_SHOW_PASSED=1  drop --quiet, so the report (e.g. `-o json`) lists passed checks too.
#
# Why a venv of its own (.venv-checkov): checkov needs bc-python-hcl2, whose module is named `hcl2`
# and would shadow python-hcl2 in .venv. It is created on first use (about 30 s on a fresh
# machine) and reused while its stamp matches the pinned version.
# No global skips here: a skip is a `#checkov:skip=CKV_X:reason` comment next to the code it skips.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
CHECKOV_SPEC=${CHECKOV_SPEC:-checkov==3.3.30}
VENV="$ROOT/.venv-checkov"
STAMP="$VENV/.dgemma-checkov-ready"
CHECKS="$ROOT/tests/terraform/checkov"

ready() { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$CHECKOV_SPEC" ]; }

if ! ready; then
  mkdir -p "$VENV"
  # Two callers at once (make and a test run) must not install over each other.
  exec 9>"$VENV/.setup.lock"
  flock 9
  if ! ready; then
    start=$(date +%s)
    echo "creating the checkov venv in $VENV ($CHECKOV_SPEC): about 30 s on a fresh machine" >&2
    "$PY" -m venv "$VENV"
    # pip warns once per missing local index directory; those lines are noise, errors still show.
    "$VENV/bin/pip" install --progress-bar off -q "$CHECKOV_SPEC" 2>&1 \
      | { grep -v "is ignored: it is neither" || true; } >&2
    "$VENV/bin/checkov" --version >/dev/null
    echo "$CHECKOV_SPEC" >"$STAMP"
    echo "checkov venv ready in $(($(date +%s) - start)) s" >&2
  fi
  exec 9>&-
fi

target=${1:-$ROOT/terraform}
shift $(($# > 0 ? 1 : 0))
if [ ! -d "$target" ]; then
  echo "checkov.sh: no directory $target" >&2
  exit 2
fi
target=$(cd "$target" && pwd)
# An empty or mistyped tree would otherwise pass with nothing checked.
if [ -z "$(find "$target" -name '*.tf' -not -path '*/.terraform/*' -print -quit)" ]; then
  echo "checkov.sh: no .tf files under $target: nothing to check" >&2
  exit 2
fi
# checkov reads .checkov.y(a)ml from DIR, the working directory and HOME; a skip-check there would
# be a global skip. Refuse one in DIR, run from DIR, and give checkov a HOME of its own.
for cfg in "$target/.checkov.yaml" "$target/.checkov.yml"; do
  if [ -e "$cfg" ]; then
    echo "checkov.sh: $cfg would configure checkov globally; skips go inline (#checkov:skip=ID:reason)" >&2
    exit 2
  fi
done
for arg in "$@"; do
  case "$arg" in
    -s | --soft-fail* | --skip-check* | --skip-path* | --config-file*)
      echo "checkov.sh: $arg would skip checks globally; skips go inline (#checkov:skip=ID:reason)" >&2
      exit 2
      ;;
  esac
done
mkdir -p "$VENV/home"

quiet=(--quiet)
if [ "${CHECKOV_SHOW_PASSED:-0}" = 1 ]; then
  quiet=()
fi
# env -i: no CKV_*/BC_* setting (skip lists, API keys) nor PYTHONPATH from the caller reaches checkov.
# Offline: --skip-download (else it fetches policies from the Prisma Cloud API), no update check.
# CKV_PARSE_ERROR_FAIL: a .tf file checkov cannot parse fails the run instead of being left out.
run_env=(PATH="$PATH" HOME="$VENV/home" LANG=C.UTF-8 CKV_SKIP_PACKAGE_UPDATE_CHECK=true CKV_PARSE_ERROR_FAIL=true)
if [ -n "${TMPDIR:-}" ]; then run_env+=(TMPDIR="$TMPDIR"); fi
if [ -n "${LOG_LEVEL:-}" ]; then run_env+=(LOG_LEVEL="$LOG_LEVEL"); fi
cd "$target"
exec env -i "${run_env[@]}" \
  "$VENV/bin/checkov" -d "$target" --framework terraform --skip-download --compact "${quiet[@]}" \
  --external-checks-dir "$CHECKS" "$@"
