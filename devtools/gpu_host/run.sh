#!/usr/bin/env bash
# A measurement on an offline GPU host (a driver and Python 3.12, no package index), one device call
# per step, from the checkout's root. JOB picks what runs once the host is set up:
#   arms       devtools/engine_arms.py (docs/engine-arms-h200, docs/engine-sizing-h200)
#   gpu-check  `dgemma gpu-check`, with devtools/gpu_host/profile_engine.sh beside it
#              (docs/throughput-h200, docs/compile-cache-h200)
# Steps:
#   stage PART   copy one carried piece of the vLLM bundle ($PARTS$PART) to $STAGE. A call carries
#                only so much beside the tree (the device's limit): split the bundle's tarball into
#                pieces of that limit less the tree's disk use, with a margin, e.g.
#                `cat .gpu/part.* | split -b SIZE - .gpu/s/p.`, and stage them one call each
#   extra        copy the carried extra wheels ($EXTRA_WHEELS/*.whl: locust, matplotlib, py-spy...) to
#                $HOST_DIR/wheels
#   setup        the kit's wheels ($KIT_WHEELS/*.whl), the staged bundle, devtools/gpu_host/setup.sh,
#                the random checkpoint; then the job starts detached (setsid) and it polls
#   poll         wait for the job (to the call's deadline), bringing back what there is every minute
# Settings (environment), with their defaults:
#   HOST_DIR (required)  the host's work directory: kit/, bundle/, wheels/, gpu/, ckpt/ and the job's
#                        output go there
#   JOB=arms             arms | gpu-check
#   PARTS=.gpu/s/p.      the carried pieces' path prefix in the checkout (PART is appended)
#   STAGE=$HOST_DIR/stage  where the pieces gather until setup unpacks them
#   KIT_WHEELS=.whl/kit  EXTRA_WHEELS=.whl/extra  the carried wheels' folders in the checkout
#   CARRIED=".gpu .whl"  the checkout's folders that are carried pieces, not the kit (left out of kit/)
#   POLL_S=540           how long one call waits (keep it under the device's limit per call)
#   ARMS_ARGS            arms: the options after the checkpoint (e.g. --arms docs/engine-arms-h200/arms.toml
#                        --latency-seconds 15 --seconds 20; default: its own default arms)
#   GC_ARGS              gpu-check: its extra arguments (none)
#   PROFILE_ARGS="30 8 10 8"  gpu-check: profile_engine.sh's SECONDS MIN_RUNNING SETTLE NATIVE_SECONDS
#                        (py-spy once vLLM runs >= 8 requests, 10 s later: 30 s, then 8 s native);
#                        "off": no profiler
set -uo pipefail
step=${1:?step}
w=${HOST_DIR:?HOST_DIR: the host work directory}
job=${JOB:-arms}
parts=${PARTS:-.gpu/s/p.}
stage=${STAGE:-$w/stage}
kit_wheels=${KIT_WHEELS:-.whl/kit}
extra_wheels=${EXTRA_WHEELS:-.whl/extra}
read -r -a carried <<< "${CARRIED:-.gpu .whl}"
# Each job's extra arguments, split on spaces into words (never globbed).
read -r -a gc_args <<< "${GC_ARGS:-}"
read -r -a profile_args <<< "${PROFILE_ARGS:-30 8 10 8}"
read -r -a arms_args <<< "${ARMS_ARGS:-}"
deadline=$((SECONDS + ${POLL_S:-540}))
export PATH=$w/gpu/bin:$w/gpu/kit/bin:$PATH
case $job in
arms|gpu-check) ;;
*) echo "JOB=$job: arms or gpu-check" >&2; exit 2 ;;
esac
running() {
  if [ "$job" = arms ]; then pgrep -f "[d]evtools.engine_arms" > /dev/null  # also its wait for the GPU
  else pgrep -f "[g]pu-check $w/ckpt" > /dev/null; fi
}
count() { find "$1" -mindepth 1 -maxdepth 1 -printf . | wc -c; }  # the entries of a folder
collect() {
  [ -n "${OUT:-}" ] || return 0
  if [ "$job" = arms ]; then
    for f in arms.md arms.json arms.png arms.toml; do [ -f "$w/arms/$f" ] && cp "$w/arms/$f" "$OUT/"; done
    # Locust's CSVs, the starts' logs (without Locust's HTML pages), this host's own logs.
    tar czf "$OUT/arms.tar.gz.part" -C "$w" --exclude='*.html' --ignore-failed-read \
      arms arms.log setup.log model.log 2>/dev/null && mv "$OUT/arms.tar.gz.part" "$OUT/arms.tar.gz"
    nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader > "$OUT/gpu-now.txt" 2>&1
  else
    [ -f "$w/gc/report.md" ] && cp "$w/gc/report.md" "$OUT/"
    tar czf "$OUT/gc.tar.gz" -C "$w" --ignore-failed-read gc gc.log setup.log model.log 2>/dev/null
    [ -d "$w/prof" ] && tar czf "$OUT/prof.tar.gz" -C "$w" prof prof.log 2>/dev/null
  fi
  true
}
poll() {
  local last=0
  while [ $SECONDS -lt "$deadline" ] && running; do
    if [ $((SECONDS - last)) -ge 60 ]; then collect; last=$SECONDS; fi
    sleep 5
  done
  if [ "$job" = arms ]; then
    echo "--- arms.log"; tail -n 40 "$w/arms.log"
  else
    echo "--- gc.log"; tail -n 25 "$w/gc.log"
    echo "--- prof.log"; tail -n 6 "$w/prof.log" 2>/dev/null
  fi
  running && echo "$job still running" || echo "$job ended"
  collect
}
start_job() {
  if [ "$job" = gpu-check ]; then
    setsid nohup dgemma gpu-check "$w/ckpt" --compile-cache-store "$w/ccstore" --out "$w/gc" "${gc_args[@]}" \
      > "$w/gc.log" 2>&1 < /dev/null &
    if [ "${PROFILE_ARGS:-}" != off ]; then
      setsid nohup bash devtools/gpu_host/profile_engine.sh "$w/prof" "${profile_args[@]}" \
        > "$w/prof.log" 2>&1 < /dev/null &
    fi
    return
  fi
  # As `dgemma` runs (devtools/gpu_host/setup.sh): the kit and its wheels on the path, the engine's
  # python. The arms start once no other process computes on the GPU (a shared GPU made a cold start
  # and its memory figures meaningless once, docs/engine-sizing-h200 run 2); arms.log says so.
  # The inner shell expands its own variables (and "$@": the arguments after its name).
  # shellcheck disable=SC2016
  setsid nohup env PYTHONPATH="$w/kit:$w/gpu/kit" DGEMMA_ENGINE_PYTHON="$w/gpu/bin/engine-python" \
    PYTHONUNBUFFERED=1 bash -c 'while n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -c .) \
      && [ "$n" -gt 0 ]; do echo "$(date -u +%T) waiting: $n other process(es) on the GPU"; sleep 10; done
      exec python3 -m devtools.engine_arms "$@"' arms "$w/ckpt" --out "$w/arms" --cache-dir "$w/cc" \
    "${arms_args[@]}" > "$w/arms.log" 2>&1 < /dev/null &
}
case $step in
stage)
  mkdir -p "$stage" && cp "$parts${2:?PART}" "$stage/" && count "$stage" ;;
extra)
  mkdir -p "$w/wheels" && cp "$extra_wheels"/*.whl "$w/wheels/" && count "$w/wheels" ;;
setup)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  mkdir -p "$w/kit" "$w/bundle" "$w/wheels"
  cp "$kit_wheels"/*.whl "$w/wheels/"
  excludes=()
  for d in "${carried[@]}"; do excludes+=("--exclude=./${d#./}"); done
  tar "${excludes[@]}" -cf - . | tar -xf - -C "$w/kit"
  cat "$stage"/"$(basename "$parts")"* | tar x -C "$w/bundle" && rm -rf "$stage"
  t=$SECONDS
  bash "$w/kit/devtools/gpu_host/setup.sh" "$w/bundle" "$w/wheels" "$w/gpu" > "$w/setup.log" 2>&1 \
    || { tail -n 30 "$w/setup.log"; exit 1; }
  tail -n 2 "$w/setup.log"
  cd "$w/kit" || exit 1
  dgemma model random "$w/ckpt" > "$w/model.log" 2>&1 || { tail -n 30 "$w/model.log"; exit 1; }
  tail -n 3 "$w/model.log"
  echo "setup and checkpoint: $((SECONDS - t)) s"
  start_job
  sleep 5
  poll ;;
poll)
  poll ;;
*)
  echo "step $step: stage, extra, setup or poll" >&2; exit 2 ;;
esac
