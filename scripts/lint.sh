#!/usr/bin/env bash
# Static checks, exactly as CI runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
# Every shell script of the checkout: the *.sh files, and the executables whose shebang names sh or bash.
shell_scripts() {
  git ls-files '*.sh'
  git ls-files --format='%(objectmode) %(path)' | while read -r mode path; do
    [ "$mode" = 100755 ] && head -n 1 "$path" | grep -Eq '^#!.*[/ ](ba)?sh( |$)' && echo "$path"
  done
  true
}
mapfile -t scripts < <(shell_scripts | sort -u)
set -x
$BIN/ruff check .
$BIN/ruff format --check .
$BIN/mypy
$BIN/shellcheck "${scripts[@]}"
$BIN/hadolint Dockerfile
$BIN/python scripts/gen_docs.py --check
