#!/bin/sh
# The kit's installation into a venv of its own, written once for the Dockerfile's two images: its
# `gateway` stage (vLLM's Python 3.12) and its `router` stage (python:3.11-slim) each run both steps
# on their own base. Bind-mounted by the RUN that runs it: it never lands in an image.
#   install_kit.sh dependencies VENV   a venv at VENV, then the hashed lock (/tmp/gateway.lock) into it
#   install_kit.sh package VENV ARGS   the kit from /src, no dependencies (bytecode compiled, owned by
#                                      root); the build fails unless `VENV/bin/dgemma ARGS` runs
# Two steps, two layers: a change of the code reinstalls the package, not the dependencies.
set -eu
step=${1:?dependencies or package}
venv=${2:?the venv}
shift 2
case $step in
dependencies)
  # The vLLM image may lack ensurepip (python3-venv); virtualenv, pinned, is the fallback.
  python3 -m venv "$venv" \
    || { python3 -m pip install --no-cache-dir virtualenv==21.15.14 && python3 -m virtualenv "$venv"; }
  "$venv/bin/pip" install --require-hashes -r /tmp/gateway.lock ;;
package)
  "$venv/bin/pip" install --no-cache-dir --no-deps /src
  "$venv/bin/dgemma" "$@" > /dev/null ;;
*)
  echo "install_kit.sh: the step is dependencies or package, not $step" >&2
  exit 2 ;;
esac
