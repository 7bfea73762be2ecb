"""GPU exploration only: train_toy.py on CUDA with alert_corpus constants from the environment
(run from a copy of the checkout's root, as go.sh does).
V_CAT (catalogue share), V_UNL (share of the catalogue's reads without the severity label), V_HOST
(host kinds' weight multiplier, 1 = as on the branch), V_TEAM (team question weight; page and
severity share the rest equally)."""

import os
import runpy
import sys

import safetensors.torch as st
import torch

sys.path.insert(0, "deploy/models/scripts")
import alert_corpus as ac

if "V_CAT" in os.environ:
    ac.CATALOGUE_SHARE = float(os.environ["V_CAT"])
if "V_UNL" in os.environ:
    ac.CATALOGUE_UNLABELLED = float(os.environ["V_UNL"])
if "V_HOST" in os.environ:
    m = float(os.environ["V_HOST"])
    ac.KINDS = [k._replace(weight=k.weight * (m if k.key in ac.HOST_WEIGHTS else 1.0)) for k in ac.KINDS]
    ac.WEIGHTS = [k.weight for k in ac.KINDS]
if "V_TEAM" in os.environ:
    t = float(os.environ["V_TEAM"])
    ac.QUESTION_WEIGHTS = {"page": (1 - t) / 2, "team": t, "severity": (1 - t) / 2}
print(
    "variant:", ac.CATALOGUE_SHARE, ac.CATALOGUE_UNLABELLED, ac.QUESTION_WEIGHTS, sum(ac.WEIGHTS), flush=True
)
_save = st.save_file
st.save_file = lambda tensors, *a, **k: _save({n: t.cpu() for n, t in tensors.items()}, *a, **k)
if not os.environ.get("V_CPU"):
    torch.set_default_device("cuda")
torch.use_deterministic_algorithms = lambda *a, **k: None
sys.argv = ["train_toy.py", *sys.argv[1:]]
runpy.run_path("deploy/models/scripts/train_toy.py", run_name="__main__")
