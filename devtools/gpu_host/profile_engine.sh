#!/usr/bin/env bash
# Sample vLLM's processes under load with py-spy (issue 19: what caps throughput?). Run beside a
# `dgemma gpu-check`: waits until vLLM runs at least MIN_RUNNING requests (the gate's batch@32 phase),
# then records the API server and the engine core for SECONDS, side by side, as speedscope JSON and
# a text summary of the top frames.
# Usage: devtools/gpu_host/profile_engine.sh OUT_DIR [SECONDS] [MIN_RUNNING]
set -euo pipefail
out=${1:?OUT_DIR}; seconds=${2:-25}; min=${3:-8}
mkdir -p "$out"
port=""
for _ in $(seq 900); do
  port=$(pgrep -af "vllm.entrypoints.cli.main serve" | grep -o -- "--port [0-9]*" | head -1 | cut -d' ' -f2 || true)
  if [ -n "$port" ]; then
    running=$(curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | awk '/^vllm:num_requests_running/ {s+=$2} END {print int(s)}') || running=0
    [ "${running:-0}" -ge "$min" ] && break
  fi
  sleep 1
done
api=$(pgrep -f "vllm.entrypoints.cli.main serve" | head -1)
core=$(pgrep -f "EngineCore" | head -1 || true)
echo "profiling API server $api and engine core ${core:-?} for $seconds s (vLLM on port $port)"
py-spy record --nonblocking -r 100 -d "$seconds" -f speedscope -p "$api" -o "$out/apiserver.speedscope.json" &
[ -n "$core" ] && py-spy record --nonblocking -r 100 -d "$seconds" -f speedscope -p "$core" -o "$out/enginecore.speedscope.json" &
[ -n "$core" ] && (sleep $((seconds / 2)); py-spy dump -p "$core" > "$out/enginecore.dump.txt" 2>&1) &
wait
echo "profiles in $out"
