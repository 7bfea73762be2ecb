#!/usr/bin/env bash
# Make an offline GPU host (Python 3.12, a CUDA driver, no package index) able to run `dgemma
# gpu-check`: vLLM 0.32's CUDA build and its wheels into one directory, the kit's own dependencies
# into another, as the image keeps them apart (vLLM in the system python, the gateway in a venv).
#
# Usage: devtools/lab/gpu_host/setup.sh BUNDLE_DIR KIT_WHEELS_DIR PREFIX
#   BUNDLE_DIR: the untarred vLLM bundle (bundle/whl/*.whl: vLLM 0.32.0's CUDA wheel and its wheels)
#   KIT_WHEELS_DIR: wheels of requirements/gateway.lock, locust and matplotlib (cp312, manylinux)
#   PREFIX (a new directory of this host's choosing): gets site/ (vLLM), kit/ (the kit's dependencies) and bin/ (`vllm`,
#   `engine-python`, `dgemma`); put PREFIX/bin first on PATH.
set -euo pipefail
bundle=${1:?BUNDLE_DIR}; kit=${2:?KIT_WHEELS_DIR}; prefix=${3:?PREFIX}
here=$(cd "$(dirname "$0")/../../.." && pwd)
py=$(command -v python3)
mkdir -p "$prefix/bin"
start=$(date +%s)
# With bytecode, as the image has it (the Dockerfile compiles the base's site-packages, which uv
# installed without; pip here compiles as it installs). Without, every start compiles vLLM's,
# torch's and transformers' modules: docs/cold-start-h200/bytecode/ measures both.
"$py" -m pip install -q --no-index --no-deps --target "$prefix/site" "$bundle"/bundle/whl/*.whl
"$py" -m pip install -q --no-index --no-deps --target "$prefix/kit" "$kit"/*.whl
# The host's torchvision was built for its own torch: copy it beside the bundle's torch and guard its
# fake-op registrations as the engine venv's is (deploy/devstack/engine/patch_torchvision.py).
tv=$(PYTHONPATH="$prefix/site" "$py" -c "import importlib.util as u; print(u.find_spec('torchvision').submodule_search_locations[0])")
[ "$tv" = "$prefix/site/torchvision" ] || cp -r "$tv" "$prefix/site/"
PYTHONPATH="$prefix/site" "$py" "$here/deploy/devstack/engine/patch_torchvision.py"
cat > "$prefix/bin/engine-python" <<SH
#!/bin/sh
# The engine's python: vLLM's site first (the supervisor's environment carries the kit's).
PYTHONPATH=$prefix/site exec $py "\$@"
SH
# A python script whose #! line names its interpreter, as the image's `vllm` is: the supervisor's
# compile cache asks that interpreter for vLLM's version (deploy/runtime/compile_cache.py).
cat > "$prefix/bin/vllm" <<PY
#!/usr/bin/env -S PYTHONPATH=$prefix/site $py
import sys

from vllm.entrypoints.cli.main import main

if __name__ == "__main__":  # vLLM's engine core is spawned: the child re-reads this file as __main__
    sys.exit(main())
PY
cat > "$prefix/bin/dgemma" <<SH
#!/bin/sh
PYTHONPATH=$here:$prefix/kit DGEMMA_ENGINE_PYTHON=$prefix/bin/engine-python exec $py -m deploy.cli "\$@"
SH
chmod +x "$prefix/bin/"*
"$prefix/bin/engine-python" -c "import vllm, torch; print('vllm', vllm.__version__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())"
"$prefix/bin/dgemma" gpu-check --help >/dev/null
echo "GPU host ready in $(( $(date +%s) - start )) s: PATH=$prefix/bin:\$PATH"
