#!/usr/bin/env bash
# Start the catalogue-share variants detached on a GPU host, from the checkout's root:
#   SWEEP_DIR=DIR WHEEL=transformers-*.whl bash evals/alerts/results/toy-sweep-catalogue/go.sh
# Each run trains deploy/models/scripts/train_toy.py through ../toy-sweep-2026-12-02/v.py (alert_corpus
# constants from the environment) in its own copy under DIR/NAME; WHEEL: a transformers wheel when the
# host's own is not the pinned version (installed into DIR/site).
set -u
w=${SWEEP_DIR:?SWEEP_DIR: the sweep work directory}
mkdir -p "$w/site"
if [ -n "${WHEEL:-}" ]; then
  pip install -q --no-index --no-deps --target "$w/site" "$WHEEL" 2>&1 | tail -2
fi
src=$PWD
run() {  # run NAME [VAR=VALUE...] [-- TRAIN_TOY_ARGS...]
  name=$1; shift; d=$w/$name; vars=(); mkdir -p "$d"
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  cp -r "$src/deploy" "$src/app" "$src/evals/alerts/results/toy-sweep-2026-12-02/v.py" "$d/"
  (cd "$d" && exec setsid nohup env PYTHONPATH="$w/site" "${vars[@]}" python3 v.py out --threads 1 "$@") \
    > "$d/train.log" 2>&1 < /dev/null &
}
# s0, s1: the shipped settings (catalogue 0.2, half of it unlabelled, team 0.55), seeds 0 and 1.
run s0
run s1 -- --seed 1
run a V_CAT=0.3 V_UNL=0.7 V_TEAM=0.6
run b V_CAT=0.4 V_UNL=0.7 V_TEAM=0.7
run c V_CAT=0.5 V_UNL=0.7 V_TEAM=0.8
run d V_CAT=0.4 V_UNL=0.9 V_TEAM=0.7
run e V_CAT=0.4 V_UNL=0.5 V_TEAM=0.7
run f V_CAT=0.3 V_UNL=0.9 V_TEAM=0.6
sleep 5; ls "$w"; nvidia-smi --query-gpu=memory.used --format=csv,noheader
