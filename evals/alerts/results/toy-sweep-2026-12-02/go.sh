#!/usr/bin/env bash
# Start the toy variants detached, from a copy of the checkout's root on a GPU host:
#   SWEEP_DIR=DIR WHEEL=transformers-*.whl bash go.sh
# SWEEP_DIR: where each run's copy, log and checkpoint go (DIR/NAME); WHEEL: a transformers wheel
# when the host's own is not the pinned version (installed into DIR/site).
set -u
w=${SWEEP_DIR:?SWEEP_DIR: the sweep work directory}
mkdir -p "$w/site"
if [ -n "${WHEEL:-}" ]; then
  pip install -q --no-index --no-deps --target "$w/site" "$WHEEL" 2>&1 | tail -2
fi
src=$PWD
run() {
  name=$1; shift; d=$w/$name; mkdir -p "$d"; cp -r "$src/deploy" "$src/app" "$src/v.py" "$d/"
  (cd "$d" && exec setsid nohup env PYTHONPATH="$w/site" "$@") > "$d/train.log" 2>&1 < /dev/null &
}
run c0 python3 v.py out --threads 1
run c1 python3 v.py out --threads 1 --seed 1
run c2 python3 v.py out --threads 1 --seed 2
run h0 env V_HOST=0.3 V_TEAM=0.55 python3 v.py out --threads 1
run h1 env V_HOST=0.3 V_TEAM=0.55 python3 v.py out --threads 1 --seed 1
run h2 env V_HOST=0.3 V_TEAM=0.55 python3 v.py out --threads 1 --seed 2
run t0 env V_TEAM=0.55 python3 v.py out --threads 1
run x0 env V_HOST=0.3 python3 v.py out --threads 1
run k0 env V_HOST=0.3 V_TEAM=0.55 V_CAT=0.2 python3 v.py out --threads 1
run k1 env V_HOST=0.3 V_TEAM=0.55 python3 v.py out --threads 1 --toy-share 0.15
sleep 5; ls "$w"; nvidia-smi --query-gpu=memory.used --format=csv,noheader
