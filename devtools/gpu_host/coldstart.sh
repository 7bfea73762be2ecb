#!/usr/bin/env bash
# Where a restored GPU start's seconds go (issue 34; docs/cold-start-h200/README.md has the run): the
# starts of devtools/coldstart.py on an offline GPU host, one device call per step, from the
# checkout's root, as devtools/gpu_host/run.sh stages its run:
#   stage DIR PART  copy one carried piece $PIECES/DIR/part.PART to $STAGE/DIR: b/ the vLLM bundle
#                   (../shared/tools/gpu-bundle.sh $PIECES/b SIZE_MIB), k/ the kit's wheels tarred
#                   (../shared/tools/kit-wheels.sh $PIECES/kit; tar cf - -C $PIECES kit | split -b
#                   SIZE - $PIECES/k/part.); a call carries only so much beside the tree (the
#                   device's limit): size the pieces as that limit less the tree's disk use, with a
#                   margin
#   setup           any pieces this call carries too, then the bundle and the kit's wheels unpacked,
#                   py-spy from the carried $EXTRA_WHEELS, devtools/gpu_host/setup.sh, the random
#                   checkpoint; then the starts begin detached (setsid) and it polls
#   poll            wait for the starts (to the call's deadline), bringing back what there is every
#                   minute: coldstart.log, starts.json, host.tgz (setup, checkpoint, the start under
#                   way) and one NN-NAME.tgz per finished start
# Settings (environment), with their defaults: HOST_DIR (required): the host's work directory.
# CS_STARTS: the --start options of devtools/coldstart.py (below). POLL_S=540: how long a call waits.
# PIECES=.gpu: the carried pieces' folder in the checkout (left out of the kit's copy, as is .whl).
# STAGE=$HOST_DIR/stage: where they gather until setup. EXTRA_WHEELS=.whl/extra: py-spy's wheel.
set -uo pipefail
step=${1:?step}
w=${HOST_DIR:?HOST_DIR: the host work directory}
deadline=$((SECONDS + ${POLL_S:-540}))
pieces=${PIECES:-.gpu}
stage=${STAGE:-$w/stage}
extra_wheels=${EXTRA_WHEELS:-.whl/extra}
export PATH=$w/gpu/bin:$w/tools/bin:$PATH
starts=${CS_STARTS:---start cold:debug,pyspy=10 --start restored-pyspy:debug,pyspy=50 \
--start restored-importtime:importtime,debug --start restored-plain \
--start restored-fork:VLLM_WORKER_MULTIPROC_METHOD=fork,timeout=180}
read -r -a start_args <<< "$starts"  # split on spaces into words (never globbed)
count() { find "$1" -mindepth 1 -maxdepth 1 -printf . | wc -c; }  # the entries of a folder
running() { pgrep -f "[d]evtools.coldstart" > /dev/null; }
collect() {
  [ -n "${OUT:-}" ] || return 0
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
  tar czf "$OUT/host.tgz" -C "$w" --ignore-failed-read setup.log model.log "${current[@]}" 2>/dev/null
  true
}
poll() {
  local last=0
  while [ $SECONDS -lt "$deadline" ] && running; do
    if [ $((SECONDS - last)) -ge 60 ]; then collect; last=$SECONDS; fi
    sleep 5
  done
  echo "--- coldstart.log"; tail -n 20 "$w/coldstart.log"
  running && echo "starts still running" || echo "starts ended"
  collect
  ls -la "${OUT:-.}"
}
stage_here() {  # the pieces this call carries
  local f d
  for f in "$pieces"/*/part.*; do
    [ -f "$f" ] || continue
    d=$(basename "$(dirname "$f")")
    mkdir -p "$stage/$d" && cp "$f" "$stage/$d/"
  done
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
  python3 -m pip install -q --no-index --no-deps --target "$w/tools" "$extra_wheels"/py_spy-*.whl || exit 1
  py-spy --version || exit 1
  t=$SECONDS
  bash "$w/kit/devtools/gpu_host/setup.sh" "$w/bundle" "$w/wheels/kit" "$w/gpu" > "$w/setup.log" 2>&1 \
    || { tail -n 30 "$w/setup.log"; exit 1; }
  tail -n 2 "$w/setup.log"
  cd "$w/kit" || exit 1
  dgemma model random "$w/ckpt" > "$w/model.log" 2>&1 || { tail -n 30 "$w/model.log"; exit 1; }
  tail -n 3 "$w/model.log"
  echo "setup and checkpoint: $((SECONDS - t)) s"
  # As `dgemma` runs (devtools/gpu_host/setup.sh): the kit and its wheels on the path, the engine's
  # python; the starts begin once no other process computes on the GPU.
  # The inner shell expands its own variables (and "$@": the arguments after its name).
  # shellcheck disable=SC2016
  setsid nohup env PYTHONPATH="$w/kit:$w/gpu/kit" DGEMMA_ENGINE_PYTHON="$w/gpu/bin/engine-python" \
    PYTHONUNBUFFERED=1 bash -c 'while n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -c .) \
      && [ "$n" -gt 0 ]; do echo "$(date -u +%T) waiting: $n other process(es) on the GPU"; sleep 10; done
      exec python3 -m devtools.coldstart "$@"' coldstart "$w/ckpt" --out "$w/cs" --store "$w/store" \
    --cache-dir "$w/cc" "${start_args[@]}" > "$w/coldstart.log" 2>&1 < /dev/null &
  sleep 5
  poll ;;
poll)
  poll ;;
esac
