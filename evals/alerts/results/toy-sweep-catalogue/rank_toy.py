"""How a toy checkpoint ranks p(page) on the catalogue's dev rules without their severity label, as
train_toy.py's dev report does (AUC, recall and false pages at 0.4), for a checkpoint trained before
that report had it. From the checkout's root, with the engine's python:

    PYTHONPATH=. .venv-engine/bin/python evals/alerts/results/toy-sweep-catalogue/rank_toy.py [MODEL_DIR]

MODEL_DIR defaults to the shipped toy (deploy/models/dgemma-toy-alerts); its bf16 weights are read.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, "deploy/models/scripts")
import alert_corpus as ac
import torch
import train_toy as tt
from transformers import AutoTokenizer

torch.set_num_threads(2)
model_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "deploy/models/dgemma-toy-alerts")
model = tt.load_model(model_dir)
model.eval()
renderer = tt.Renderer(AutoTokenizer.from_pretrained(str(model_dir)), tt.VOCAB)
q = ac.policy_questions(ac.POLICY)["page"]
rows = ac.catalogue("dev")
order = tuple(range(len(q.options)))
reads = [
    ac.read_of(ac.unlabelled(r["state"]), q, ac.answer_index(q, "page", ac.catalogue_answers(r)), order, "")[
        :6
    ]
    for r in rows
]
probs = tt._probs(model, renderer, reads)
yes = ac.answer_index(q, "page", {"page": True})
ranking = tt.page_ranking([p[yes] for p in probs], [ac.needs_page(r["severity"]) for r in rows])
print(json.dumps({"accuracy": tt._accuracy(probs, reads), **ranking}))
