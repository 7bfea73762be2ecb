#!/usr/bin/env bash
# Start the toy variants detached.
set -u
mkdir -p /root/toysite /root/tv
pip install -q --no-index --no-deps --target /root/toysite transformers-5.19.0-py3-none-any.whl 2>&1 | tail -2
src=$PWD
run() { name=$1; shift; d=/root/tv/$name; mkdir -p $d; cp -r $src/deploy $src/app $src/v.py $d/;
  (cd $d && exec setsid nohup env PYTHONPATH=/root/toysite "$@") > $d/train.log 2>&1 < /dev/null & }
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
sleep 5; ls /root/tv; nvidia-smi --query-gpu=memory.used --format=csv,noheader
