#!/usr/bin/env bash
# A measurement on a GPU host: any machine with an NVIDIA driver and Python 3.12 that you can copy
# files to and run commands on (no package index needed there). Run from the checkout's root, copied
# to the host. JOB picks what runs once the host is set up:
#   arms       devtools/lab/engine_arms.py (docs/engine-arms-h200, docs/engine-sizing-h200, docs/cold-start-h200)
#   gpu-check  `dgemma gpu-check`, with devtools/lab/gpu_host/profile_engine.sh beside it
#              (docs/throughput-h200, docs/compile-cache-h200)
#   coldstart  devtools/lab/coldstart.py's starts (docs/cold-start-h200), py-spy from $EXTRA_WHEELS
# What it installs from (made on a machine with a package index):
#   b/  the vLLM bundle: a tar of bundle/whl/*.whl, vLLM 0.32.0's CUDA wheel and every wheel it
#       needs for the host's Python (`pip download vllm==0.32.0 -d bundle/whl`, then `tar c`)
#   k/  the kit's wheels, a tar of kit/*.whl: requirements/gateway.lock, locust and matplotlib
#   Either whole (one file, part.aa) or split into pieces (`split -b SIZE - DIR/part.`), for a copy
#   that takes files of a limited size.
# Steps:
#   stage DIR PART  put one piece $PIECES/DIR/part.PART where setup gathers them ($STAGE/DIR)
#   setup           any pieces in $PIECES too, then the bundle and the kit's wheels unpacked,
#                   devtools/lab/gpu_host/setup.sh, the random checkpoint; then the job starts detached
#                   (setsid, once no other process computes on the GPU) and it polls
#   poll            wait for the job for up to POLL_S seconds, copying what there is to $OUT every
#                   minute (if set); call it again until it says the job ended
# Settings (environment), with their defaults:
#   HOST_DIR (required)  the host's work directory: kit/, bundle/, wheels/, gpu/, ckpt/ and the job's
#                        output go there
#   JOB=arms             arms | gpu-check | coldstart
#   PIECES=.gpu          the pieces copied with the checkout (left out of the kit's copy, as is .whl)
#   STAGE=$HOST_DIR/stage  where the pieces gather until setup unpacks them
#   EXTRA_WHEELS=.whl/extra  wheels installed as tools (py-spy), if they were copied
#   POLL_S=540           how long setup and poll wait for the job before they return (it runs on)
#   OUT                  where results are copied as they come (unset: they stay under HOST_DIR)
#   ARMS_ARGS            arms: the options after the checkpoint (e.g. --arms docs/engine-arms-h200/arms.toml
#                        --latency-seconds 15 --seconds 20; default: its own default arms)
#   GC_ARGS              gpu-check: its extra arguments (none)
#   PROFILE_ARGS="30 8 10 8"  gpu-check: profile_engine.sh's SECONDS MIN_RUNNING SETTLE NATIVE_SECONDS
#                        (py-spy once vLLM runs >= 8 requests, 10 s later: 30 s, then 8 s native);
#                        "off": no profiler
#   CS_STARTS            coldstart: its --start options (default below)
set -uo pipefail
step=${1:?step}
w=${HOST_DIR:?HOST_DIR: the host work directory}
job=${JOB:-arms}
pieces=${PIECES:-.gpu}
stage=${STAGE:-$w/stage}
extra_wheels=${EXTRA_WHEELS:-.whl/extra}
# Each job's extra arguments, split on spaces into words (never globbed).
read -r -a gc_args <<< "${GC_ARGS:-}"
read -r -a profile_args <<< "${PROFILE_ARGS:-30 8 10 8}"
read -r -a arms_args <<< "${ARMS_ARGS:-}"
read -r -a start_args <<< "${CS_STARTS:---start cold:debug,pyspy=10 --start restored-pyspy:debug,pyspy=50 \
--start restored-importtime:importtime,debug --start restored-plain \
--start restored-fork:VLLM_WORKER_MULTIPROC_METHOD=fork,timeout=180}"
deadline=$((SECONDS + ${POLL_S:-540}))
export PATH=$w/gpu/bin:$w/gpu/kit/bin:$w/tools/bin:$PATH
case $job in
arms) pattern="[d]evtools.lab.engine_arms" ;;  # also its wait for the GPU
coldstart) pattern="[d]evtools.lab.coldstart" ;;
gpu-check) pattern="[g]pu-check $w/ckpt" ;;
*) echo "JOB=$job: arms, gpu-check or coldstart" >&2; exit 2 ;;
esac
running() { pgrep -f "$pattern" > /dev/null; }
count() { find "$1" -mindepth 1 -maxdepth 1 -printf . | wc -c; }  # the entries of a folder
collect() {
  [ -n "${OUT:-}" ] || return 0
  case $job in
  arms)
    for f in arms.md arms.json arms.png arms.toml; do [ -f "$w/arms/$f" ] && cp "$w/arms/$f" "$OUT/"; done
    # Locust's CSVs, the starts' logs (without Locust's HTML pages), this host's own logs.
    tar czf "$OUT/arms.tar.gz.part" -C "$w" --exclude='*.html' --ignore-failed-read \
      arms arms.log setup.log model.log 2>/dev/null && mv "$OUT/arms.tar.gz.part" "$OUT/arms.tar.gz"
    nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader > "$OUT/gpu-now.txt" 2>&1 ;;
  gpu-check)
    [ -f "$w/gc/report.md" ] && cp "$w/gc/report.md" "$OUT/"
    tar czf "$OUT/gc.tar.gz" -C "$w" --ignore-failed-read gc gc.log setup.log model.log 2>/dev/null
    [ -d "$w/prof" ] && tar czf "$OUT/prof.tar.gz" -C "$w" prof prof.log 2>/dev/null ;;
  coldstart)
    cp "$w/coldstart.log" "$OUT/" 2>/dev/null
    cp "$w/cs/starts.json" "$OUT/" 2>/dev/null
    local d n current=()
    for d in "$w"/cs/[0-9][0-9]-*/; do
      [ -d "$d" ] || continue
      n=$(basename "$d")
      if [ -f "$d/start.json" ]; then
        [ -f "$OUT/$n.tgz" ] || tar czf "$OUT/$n.tgz" -C "$w/cs" "$n"
      else
        current=("cs/$n/run.log")
      fi
    done
    tar czf "$OUT/host.tgz" -C "$w" --ignore-failed-read setup.log model.log "${current[@]}" 2>/dev/null ;;
  esac
  true
}
poll() {
  local last=0
  while [ $SECONDS -lt "$deadline" ] && running; do
    if [ $((SECONDS - last)) -ge 60 ]; then collect; last=$SECONDS; fi
    sleep 5
  done
  case $job in
  arms) echo "--- arms.log"; tail -n 40 "$w/arms.log" ;;
  coldstart) echo "--- coldstart.log"; tail -n 20 "$w/coldstart.log" ;;
  gpu-check)
    echo "--- gc.log"; tail -n 25 "$w/gc.log"
    echo "--- prof.log"; tail -n 6 "$w/prof.log" 2>/dev/null ;;
  esac
  running && echo "$job still running" || echo "$job ended"
  collect
}
stage_here() {  # the pieces copied with the checkout
  local f d
  for f in "$pieces"/*/part.*; do
    [ -f "$f" ] || continue
    d=$(basename "$(dirname "$f")")
    mkdir -p "$stage/$d" && cp "$f" "$stage/$d/"
  done
}
start_job() {
  if [ "$job" = gpu-check ]; then
    setsid nohup dgemma gpu-check "$w/ckpt" --compile-cache-store "$w/ccstore" --out "$w/gc" "${gc_args[@]}" \
      > "$w/gc.log" 2>&1 < /dev/null &
    if [ "${PROFILE_ARGS:-}" != off ]; then
      setsid nohup bash devtools/lab/gpu_host/profile_engine.sh "$w/prof" "${profile_args[@]}" \
        > "$w/prof.log" 2>&1 < /dev/null &
    fi
    return
  fi
  local args=()
  if [ "$job" = arms ]; then
    args=(engine_arms "$w/ckpt" --out "$w/arms" --cache-dir "$w/cc" "${arms_args[@]}")
  else
    args=(coldstart "$w/ckpt" --out "$w/cs" --store "$w/store" --cache-dir "$w/cc" "${start_args[@]}")
  fi
  # As `dgemma` runs (devtools/lab/gpu_host/setup.sh): the kit and its wheels on the path, the engine's
  # python. The job starts once no other process computes on the GPU (a shared GPU made a cold start
  # and its memory figures meaningless once, docs/engine-sizing-h200 run 2); its log says so.
  # The inner shell expands its own variables (and "$@": the arguments after its name).
  # shellcheck disable=SC2016
  setsid nohup env PYTHONPATH="$w/kit:$w/gpu/kit" DGEMMA_ENGINE_PYTHON="$w/gpu/bin/engine-python" \
    PYTHONUNBUFFERED=1 bash -c 'while n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -c .) \
      && [ "$n" -gt 0 ]; do echo "$(date -u +%T) waiting: $n other process(es) on the GPU"; sleep 10; done
      m=$1; shift; exec python3 -m "devtools.lab.$m" "$@"' "$job" "${args[@]}" > "$w/$job.log" 2>&1 < /dev/null &
}
case $step in
stage)
  mkdir -p "$stage/${2:?DIR}" && cp "$pieces/$2/part.${3:?PART}" "$stage/$2/" && count "$stage/$2" ;;
setup)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  stage_here
  count "$stage/b"; count "$stage/k"
  mkdir -p "$w/kit" "$w/bundle" "$w/wheels" "$w/tools"
  tar --exclude="./${pieces#./}" --exclude=./.whl -cf - . | tar -xf - -C "$w/kit"
  cat "$stage"/b/part.* | tar x -C "$w/bundle" || exit 1
  cat "$stage"/k/part.* | tar x -C "$w/wheels" || exit 1
  rm -rf "$stage"
  if compgen -G "$extra_wheels/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --target "$w/tools" "$extra_wheels"/*.whl || exit 1
  fi
  [ "$job" != coldstart ] || py-spy --version || exit 1
  t=$SECONDS
  bash "$w/kit/devtools/lab/gpu_host/setup.sh" "$w/bundle" "$w/wheels/kit" "$w/gpu" > "$w/setup.log" 2>&1 \
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
  echo "step $step: stage, setup or poll" >&2; exit 2 ;;
esac
