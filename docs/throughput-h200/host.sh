#!/usr/bin/env bash
# The host side of this run, as it was sent (each step one device call, from the checkout's root).
#   stage  PART   copy one carried piece of the vLLM bundle to $HOST_DIR/stage: .gpu/s/p.XX, the parts re-split
#                 (cat .gpu/part.* | split -b 56M - .gpu/s/p.) to fit the 64 MiB a call carries beside
#                 the tree; size the pieces as 64 MiB less the tree's disk use, with a margin
#   extra         copy the carried .whl/extra wheels (locust, matplotlib, py-spy...) to $HOST_DIR/wheels
#   setup         the kit's wheels (carried), the host's packages, the random checkpoint; then
#                 gpu-check and the profiler start detached, and it polls
#   poll          wait for the check (to the call's deadline), and bring back what there is
# HOST_DIR (required): the host's work directory (this run used /root); GC_ARGS: extra arguments of
# gpu-check (none by default).
set -uo pipefail
step=${1:?step}
w=${HOST_DIR:?HOST_DIR: the host work directory}
deadline=$((SECONDS + ${POLL_S:-540}))
export PATH=$w/gpu/bin:$w/gpu/kit/bin:$PATH
collect() {
  [ -n "${OUT:-}" ] || return 0
  [ -f $w/gc/report.md ] && cp $w/gc/report.md "$OUT/"
  tar czf "$OUT/gc.tar.gz" -C "$w" --ignore-failed-read gc gc.log setup.log model.log 2>/dev/null
  [ -d $w/prof ] && tar czf "$OUT/prof.tar.gz" -C "$w" prof prof.log 2>/dev/null
  true
}
poll() {
  while [ $SECONDS -lt $deadline ]; do
    pgrep -f "[g]pu-check $w/ckpt" > /dev/null || break
    sleep 5
  done
  echo "--- gc.log"; tail -n 25 $w/gc.log
  echo "--- prof.log"; tail -n 6 $w/prof.log 2>/dev/null
  pgrep -f "[g]pu-check $w/ckpt" > /dev/null && echo "gpu-check still running" || echo "gpu-check ended"
  collect
}
case $step in
stage)
  mkdir -p $w/stage && cp ".gpu/s/p.${2:?PART}" $w/stage/ && ls $w/stage | wc -l ;;
extra)
  mkdir -p $w/wheels && cp .whl/extra/*.whl $w/wheels/ && ls $w/wheels | wc -l ;;
setup)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  mkdir -p $w/kit $w/bundle $w/wheels
  cp .whl/kit/*.whl $w/wheels/
  tar --exclude=./.gpu --exclude=./.whl -cf - . | tar -xf - -C $w/kit
  cat $w/stage/p.* | tar x -C $w/bundle && rm -rf $w/stage
  t=$SECONDS
  bash $w/kit/devtools/gpu_host/setup.sh $w/bundle $w/wheels $w/gpu > $w/setup.log 2>&1 \
    || { tail -n 30 $w/setup.log; exit 1; }
  tail -n 2 $w/setup.log
  cd $w/kit
  dgemma model random $w/ckpt > $w/model.log 2>&1 || { tail -n 30 $w/model.log; exit 1; }
  tail -n 3 $w/model.log
  echo "setup and checkpoint: $((SECONDS - t)) s"
  # shellcheck disable=SC2086
  setsid nohup dgemma gpu-check $w/ckpt --compile-cache-store $w/ccstore --out $w/gc ${GC_ARGS:-} \
    > $w/gc.log 2>&1 < /dev/null &
  # py-spy once vLLM runs >= 8 requests (batch@32), 10 s later: 30 s of both, then 8 s native.
  setsid nohup bash devtools/gpu_host/profile_engine.sh $w/prof 30 8 10 8 > $w/prof.log 2>&1 < /dev/null &
  sleep 5
  poll ;;
poll)
  poll ;;
esac
