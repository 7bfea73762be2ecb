#!/usr/bin/env bash
# The host side of this run, as it was sent (each step one device call, from the checkout's root).
#   stage  PART   copy one carried piece of the vLLM bundle to /root/stage: .gpu/s/p.XX, the parts re-split
#                 (cat .gpu/part.* | split -b 56M - .gpu/s/p.) to fit the 64 MiB a call carries beside
#                 the tree; size the pieces as 64 MiB less the tree's disk use, with a margin
#   extra         copy the carried .whl/extra wheels (locust, matplotlib, py-spy...) to /root/wheels
#   setup         the kit's wheels (carried), the host's packages, the random checkpoint; then
#                 gpu-check and the profiler start detached, and it polls
#   poll          wait for the check (to the call's deadline), and bring back what there is
# GC_ARGS: extra arguments of gpu-check (none by default).
set -uo pipefail
step=${1:?step}
deadline=$((SECONDS + ${POLL_S:-540}))
export PATH=/root/gpu/bin:/root/gpu/kit/bin:$PATH
collect() {
  [ -n "${OUT:-}" ] || return 0
  [ -f /root/gc/report.md ] && cp /root/gc/report.md "$OUT/"
  tar czf "$OUT/gc.tar.gz" -C /root --ignore-failed-read gc gc.log setup.log model.log 2>/dev/null
  [ -d /root/prof ] && tar czf "$OUT/prof.tar.gz" -C /root prof prof.log 2>/dev/null
  true
}
poll() {
  while [ $SECONDS -lt $deadline ]; do
    pgrep -f "[g]pu-check /root/ckpt" > /dev/null || break
    sleep 5
  done
  echo "--- gc.log"; tail -n 25 /root/gc.log
  echo "--- prof.log"; tail -n 6 /root/prof.log 2>/dev/null
  pgrep -f "[g]pu-check /root/ckpt" > /dev/null && echo "gpu-check still running" || echo "gpu-check ended"
  collect
}
case $step in
stage)
  mkdir -p /root/stage && cp ".gpu/s/p.${2:?PART}" /root/stage/ && ls /root/stage | wc -l ;;
extra)
  mkdir -p /root/wheels && cp .whl/extra/*.whl /root/wheels/ && ls /root/wheels | wc -l ;;
setup)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  mkdir -p /root/kit /root/bundle /root/wheels
  cp .whl/kit/*.whl /root/wheels/
  tar --exclude=./.gpu --exclude=./.whl -cf - . | tar -xf - -C /root/kit
  cat /root/stage/p.* | tar x -C /root/bundle && rm -rf /root/stage
  t=$SECONDS
  bash /root/kit/devtools/gpu_host/setup.sh /root/bundle /root/wheels /root/gpu > /root/setup.log 2>&1 \
    || { tail -n 30 /root/setup.log; exit 1; }
  tail -n 2 /root/setup.log
  cd /root/kit
  dgemma model random /root/ckpt > /root/model.log 2>&1 || { tail -n 30 /root/model.log; exit 1; }
  tail -n 3 /root/model.log
  echo "setup and checkpoint: $((SECONDS - t)) s"
  # shellcheck disable=SC2086
  setsid nohup dgemma gpu-check /root/ckpt --compile-cache-store /root/ccstore --out /root/gc ${GC_ARGS:-} \
    > /root/gc.log 2>&1 < /dev/null &
  # py-spy once vLLM runs >= 8 requests (batch@32), 10 s later: 30 s of both, then 8 s native.
  setsid nohup bash devtools/gpu_host/profile_engine.sh /root/prof 30 8 10 8 > /root/prof.log 2>&1 < /dev/null &
  sleep 5
  poll ;;
poll)
  poll ;;
esac
