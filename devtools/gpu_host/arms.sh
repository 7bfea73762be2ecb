#!/usr/bin/env bash
# The engine arms (devtools/engine_arms.py) on an offline GPU host, one device call per step, from
# the checkout's root (docs/engine-arms-h200/README.md has the run):
#   stage PART   copy one carried piece of the vLLM bundle (.gpu/s/p.XX) to $HOST_DIR/stage; size the
#                pieces as the 64 MiB a call carries less the tree's disk use, with a margin
#   extra        copy the carried .whl/extra wheels (locust, matplotlib...) to $HOST_DIR/wheels
#   setup        the kit's wheels (carried .whl/kit), devtools/gpu_host/setup.sh, the random
#                checkpoint; then the arms start detached (setsid) and it polls
#   poll         wait for the arms (to the call's deadline), bringing back what there is every minute
# HOST_DIR (required): the host's work directory. ARMS_ARGS: the arms command's options after the
# checkpoint (default: its own default arms). POLL_S: how long a call waits (540).
set -uo pipefail
step=${1:?step}
w=${HOST_DIR:?HOST_DIR: the host work directory}
deadline=$((SECONDS + ${POLL_S:-540}))
export PATH=$w/gpu/bin:$w/gpu/kit/bin:$PATH
running() { pgrep -f "[d]evtools.engine_arms" > /dev/null; }  # also its wait for the GPU
collect() {
  [ -n "${OUT:-}" ] || return 0
  for f in arms.md arms.json arms.png; do [ -f "$w/arms/$f" ] && cp "$w/arms/$f" "$OUT/"; done
  # Locust's CSVs, the starts' logs (without Locust's HTML pages), this host's own logs.
  tar czf "$OUT/arms.tar.gz.part" -C "$w" --exclude='*.html' --ignore-failed-read \
    arms arms.log setup.log model.log 2>/dev/null && mv "$OUT/arms.tar.gz.part" "$OUT/arms.tar.gz"
  nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader > "$OUT/gpu-now.txt" 2>&1
  true
}
poll() {
  local last=0
  while [ $SECONDS -lt "$deadline" ] && running; do
    if [ $((SECONDS - last)) -ge 60 ]; then collect; last=$SECONDS; fi
    sleep 5
  done
  echo "--- arms.log"; tail -n 40 "$w/arms.log"
  running && echo "arms still running" || echo "arms ended"
  collect
}
case $step in
stage)
  mkdir -p "$w/stage" && cp ".gpu/s/p.${2:?PART}" "$w/stage/" && ls "$w/stage" | wc -l ;;
extra)
  mkdir -p "$w/wheels" && cp .whl/extra/*.whl "$w/wheels/" && ls "$w/wheels" | wc -l ;;
setup)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  mkdir -p "$w/kit" "$w/bundle" "$w/wheels"
  cp .whl/kit/*.whl "$w/wheels/"
  tar --exclude=./.gpu --exclude=./.whl -cf - . | tar -xf - -C "$w/kit"
  cat "$w"/stage/p.* | tar x -C "$w/bundle" && rm -rf "$w/stage"
  t=$SECONDS
  bash "$w/kit/devtools/gpu_host/setup.sh" "$w/bundle" "$w/wheels" "$w/gpu" > "$w/setup.log" 2>&1 \
    || { tail -n 30 "$w/setup.log"; exit 1; }
  tail -n 2 "$w/setup.log"
  cd "$w/kit" || exit 1
  dgemma model random "$w/ckpt" > "$w/model.log" 2>&1 || { tail -n 30 "$w/model.log"; exit 1; }
  tail -n 3 "$w/model.log"
  echo "setup and checkpoint: $((SECONDS - t)) s"
  # As `dgemma` runs (devtools/gpu_host/setup.sh): the kit and its wheels on the path, the engine's
  # python. The arms start once no other process computes on the GPU (a shared GPU made a cold start
  # and its memory figures meaningless once, docs/engine-sizing-h200 run 2); arms.log says so.
  # shellcheck disable=SC2086
  setsid nohup env PYTHONPATH="$w/kit:$w/gpu/kit" DGEMMA_ENGINE_PYTHON="$w/gpu/bin/engine-python" \
    PYTHONUNBUFFERED=1 bash -c 'while n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -c .) \
      && [ "$n" -gt 0 ]; do echo "$(date -u +%T) waiting: $n other process(es) on the GPU"; sleep 10; done
      exec python3 -m devtools.engine_arms "$@"' arms "$w/ckpt" --out "$w/arms" --cache-dir "$w/cc" \
    ${ARMS_ARGS:-} > "$w/arms.log" 2>&1 < /dev/null &
  sleep 5
  poll ;;
poll)
  poll ;;
esac
