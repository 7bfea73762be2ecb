"""Label probabilities of the toy model's reads as the training forward computes them (run with the
engine's python): the other side of the parity test against the real engine.

toy_reads MODEL_DIR READS_JSON
    READS_JSON: [[state, kind, instructions, options, descriptions], ...], where a state is text or
    JSON (an object, as the alert router sends), instructions may be null (no "Question:" line) and
    descriptions (one per option, null for none; may be left out) are a choice's criteria; prints
    [[p per label], ...] as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy" / "models" / "scripts"))
from train_toy import Renderer, load_model, read_logits


def main() -> None:
    from transformers import AutoTokenizer

    model_dir = Path(sys.argv[1])
    reads = json.loads(Path(sys.argv[2]).read_text())
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    config = json.loads((model_dir / "config.json").read_text())
    renderer = Renderer(tokenizer, config["text_config"]["vocab_size"])
    model = load_model(model_dir).eval()
    rendered = [renderer.read(*r) for r in reads]
    with torch.no_grad():
        logits = read_logits(model, [r[0] for r in rendered], [r[1] for r in rendered])
    out = [
        torch.softmax(row[labels], -1).tolist() for row, (_, _, labels) in zip(logits, rendered, strict=True)
    ]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
