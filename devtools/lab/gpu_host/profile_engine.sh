#!/usr/bin/env bash
# Sample vLLM's processes under load with py-spy (issue 19: what caps throughput?). Run beside a
# `dgemma gpu-check`: waits until vLLM runs at least MIN_RUNNING requests (the gate's batch@32 phase),
# then SETTLE seconds more, then records the API server and the engine core for SECONDS, side by side,
# as speedscope JSON (py-spy --nonblocking: the processes are not paused), while vLLM's /metrics is
# read every second (metrics.tsv; the whole text at the start and the end) and top samples the
# threads. Then, if NATIVE_SECONDS > 0, the engine core once more with native frames (py-spy --native
# pauses the process at each sample: it slows the engine while it runs) and three native dumps.
# Usage: devtools/lab/gpu_host/profile_engine.sh OUT_DIR [SECONDS] [MIN_RUNNING] [SETTLE] [NATIVE_SECONDS]
set -uo pipefail
out=${1:?OUT_DIR}; seconds=${2:-25}; min=${3:-8}; settle=${4:-0}; native=${5:-0}
mkdir -p "$out"
# The supervisor starts `vllm serve` (a python script on the GPU host, `python3 .../vllm serve ...`);
# the bracket keeps pgrep from matching a shell whose own command line holds this pattern.
serve='[v]llm serve'
port=""
metrics() { curl -sf --max-time 2 "http://127.0.0.1:$port/metrics"; }
for _ in $(seq 1200); do
  port=$(pgrep -af "$serve" | grep -o -- "--port [0-9]*" | head -1 | cut -d' ' -f2 || true)
  if [ -n "$port" ]; then
    running=$(metrics 2>/dev/null | awk '/^vllm:num_requests_running[{ ]/ {s+=$2} END {print int(s)}') || running=0
    [ "${running:-0}" -ge "$min" ] && break
  fi
  sleep 1
done
sleep "$settle"
api=$(pgrep -f "$serve" | head -1)
core=$(pgrep -f "EngineCore" | head -1 || true)
echo "$(date -u +%T) profiling API server $api and engine core ${core:-?} for $seconds s (vLLM on port $port)"
metrics > "$out/metrics-start.txt"
( end=$((SECONDS + seconds + native + 5))
  printf 't\trunning\twaiting\tkv_usage\tprefix_queries\tprefix_hits\tprompt_tokens\tgeneration_tokens\n'
  while [ $SECONDS -lt $end ]; do
    metrics | awk -v t="$(date +%s.%N)" '
      /^vllm:num_requests_running[{ ]/ {r+=$2} /^vllm:num_requests_waiting[{ ]/ {w+=$2}
      /^vllm:kv_cache_usage_perc[{ ]/ {k+=$2} /^vllm:prefix_cache_queries_total[{ ]/ {q+=$2}
      /^vllm:prefix_cache_hits_total[{ ]/ {h+=$2} /^vllm:prompt_tokens_total[{ ]/ {p+=$2}
      /^vllm:generation_tokens_total[{ ]/ {g+=$2}
      END {printf "%.2f\t%d\t%d\t%.4f\t%d\t%d\t%d\t%d\n", t, r, w, k, q, h, p, g}'
    sleep 1
  done ) > "$out/metrics.tsv" &
mpid=$!
py-spy record --nonblocking -r 100 -d "$seconds" -f speedscope -p "$api" -o "$out/apiserver.speedscope.json" > "$out/py-spy-api.log" 2>&1 &
p1=$!
if [ -n "$core" ]; then
  py-spy record --nonblocking -r 100 -d "$seconds" -f speedscope -p "$core" -o "$out/enginecore.speedscope.json" > "$out/py-spy-core.log" 2>&1 &
  p2=$!
  (sleep $((seconds / 2)); py-spy dump -p "$core" > "$out/enginecore.dump.txt" 2>&1) &
  p3=$!
  (sleep $((seconds / 3)); top -H -b -d 5 -n 2 -p "$core,$api" > "$out/top-threads.txt" 2>&1) &
  p4=$!
  wait "$p2" "$p3" "$p4"
fi
wait "$p1"
metrics > "$out/metrics-mid.txt"
if [ -n "$core" ] && [ "$native" -gt 0 ]; then
  echo "$(date -u +%T) engine core with native frames for $native s"
  py-spy record --native -r 50 -d "$native" -f speedscope -p "$core" -o "$out/enginecore-native.speedscope.json" > "$out/py-spy-native.log" 2>&1
  for i in 1 2 3; do py-spy dump --native -p "$core" > "$out/enginecore-native-dump$i.txt" 2>&1; sleep 0.3; done
fi
wait "$mpid"
metrics > "$out/metrics-end.txt"
echo "$(date -u +%T) profiles in $out"
