"""Train the toy DiffusionGemma on the synthetic alert task, exactly as vLLM reads it.

Usage (with the engine venv's python, which has torch and transformers):
    python deploy/models/scripts/train_toy.py OUT_DIR [--steps 4000] [--time-limit 1740] [--threads 2]

OUT_DIR gets a servable checkpoint: tokenizer (byte-level BPE trained on the task's text, so reads
are ~3x shorter than in bytes), config, bf16 weights (the decoder copy, as tiny_model.py saves
them), train_log.json (loss and accuracy per question, dev accuracy, timings, weight hash),
README.md and manifest.json (the kit's checkpoint manifest, deploy/runtime/weights.py, which `dgemma dev`
verifies it against). The same arguments and thread count give the same weights (MKL is kept to one
thread for that).

Each example is one per-question read rendered as vLLM 0.32's DiffusionGemmaCanvasStrategy does:
user turn `state + "\\n\\n" + question prompt` through the chat template, then the thought block;
canvas `[sha256 noise id, <turn|>, pad x 14]`. One batched pass over `[prompt | canvas]` with a
4D mask (prompt causal, canvas bidirectional over prompt and canvas, canvas embeddings through
self-conditioning with a zero signal) equals the engine's one read-only denoising step. The loss
is cross-entropy over the vocabulary at canvas slot 0 against the right label's token.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import string
import sys
import time
from pathlib import Path
from typing import Any

# MKL's own threads split some products differently from one process to the next (measured: about
# 1 process in 20 read different last bits at the first step, on 2 threads); torch's threads stay.
# One MKL thread made 60 of 60 processes agree, at no measurable cost (wall ratio 0.99 on 60 steps).
os.environ["MKL_NUM_THREADS"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_model
import toy_task

THOUGHT = "<|channel>thought\n<channel|>"
CANVAS = 16
NAME = "dgemma-toy-alerts"


def question_text(kind: str, instructions: str, options: list[str]) -> tuple[str, list[str]]:
    """vLLM's question prompt for options without descriptions, and each option's label."""
    lines = [f"Question: {instructions}"]
    if kind == "choice":
        labels = list(string.ascii_uppercase[: len(options)])
        lines += [f"{label}: {o}" for label, o in zip(labels, options, strict=True)]
        lines.append("Answer with the letter of one option only.")
    elif kind == "noul":
        labels = ["yes", "no"]
        lines += labels  # a side without a description shows its label
        lines.append("Answer with yes or no only.")
    else:
        labels = list(string.digits[: len(options)])
        lines += [f"{label}: {o}" for label, o in zip(labels, options, strict=True)]
        lines.append("Answer with the number of one level only.")
    return "\n".join(lines), labels


class Renderer:
    """Reads as token ids, the way vLLM builds them."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        self.tok = tokenizer
        self.vocab = vocab_size
        self.thought = tokenizer.encode(THOUGHT, add_special_tokens=False)
        self.end = tokenizer.convert_tokens_to_ids("<turn|>")
        self.pad = tokenizer.pad_token_id
        self.labels: dict[str, int] = {}

    def label_id(self, label: str) -> int:
        if label not in self.labels:
            ids = self.tok.encode(label, add_special_tokens=False)
            if len(ids) != 1:
                raise SystemExit(f"label {label!r} is not one token: {ids}")
            self.labels[label] = ids[0]
        return self.labels[label]

    def read(self, state: str, kind: str, instructions: str, options: list[str]):
        """(prompt ids with the thought block, canvas ids, label ids in option order)."""
        qtext, labels = question_text(kind, instructions, options)
        ids = self.tok.apply_chat_template(
            [{"role": "user", "content": f"{state}\n\n{qtext}"}],
            add_generation_prompt=True, tokenize=True, return_dict=False, enable_thinking=False,
        )  # fmt: skip
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        # The canvas noise is seeded by the prompt WITHOUT the thought block, as the engine does.
        rng = random.Random(hashlib.sha256(json.dumps(ids).encode()).digest())
        canvas = [rng.randrange(self.vocab), self.end] + [self.pad] * (CANVAS - 2)
        return ids + self.thought, canvas, [self.label_id(label) for label in labels]


def load_model(model_dir: Path):
    """transformers' DiffusionGemma from a text-only checkpoint, with a throwaway vision tower
    (transformers always builds one); encoder and lm_head are tied to the saved decoder."""
    from safetensors.torch import load_file
    from transformers import DiffusionGemmaConfig
    from transformers.models.diffusion_gemma.modeling_diffusion_gemma import (
        DiffusionGemmaForBlockDiffusion,
    )

    cfg = DiffusionGemmaConfig.from_pretrained(str(model_dir)).to_dict()
    cfg["vision_config"] = {
        "model_type": "gemma4_vision", "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 16,
    }  # fmt: skip
    for key in ("model_type", "transformers_version"):
        cfg.pop(key, None)
    config = DiffusionGemmaConfig(**cfg)
    config._attn_implementation = "eager"
    model = DiffusionGemmaForBlockDiffusion(config)
    saved = load_file(str(model_dir / "model.safetensors"))
    full = {}
    for key, tensor in saved.items():
        full[key] = tensor
        if key.startswith("model.decoder.") and "self_conditioning" not in key:
            full["model.encoder.language_model." + key[len("model.decoder.") :]] = tensor
    full["lm_head.weight"] = saved["model.decoder.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(full, strict=False)
    missing = [m for m in missing if "vision" not in m]
    if missing or unexpected:
        raise SystemExit(f"checkpoint mismatch: missing {missing}, unexpected {unexpected}")
    return model.float()


def read_logits(model, prompts: list[list[int]], canvases: list[list[int]]):
    """Softcapped fp32 logits at canvas slot 0 of each read, [B, vocab], with gradients."""
    import torch

    dec = model.model.decoder
    tcfg = dec.text_config
    batch = len(prompts)
    lens = [len(p) for p in prompts]
    width = max(lens) + CANVAS
    ids = torch.full((batch, width), tcfg.pad_token_id, dtype=torch.long)
    pos = torch.arange(width).repeat(batch, 1)
    allowed = torch.zeros((batch, width, width), dtype=torch.bool)
    is_canvas = torch.zeros((batch, width), dtype=torch.bool)
    for b, (p, c) in enumerate(zip(prompts, canvases, strict=True)):
        n = len(p)
        ids[b, :n] = torch.tensor(p)
        ids[b, n : n + CANVAS] = torch.tensor(c)
        allowed[b, :n, :n] = torch.tril(torch.ones(n, n, dtype=torch.bool))
        allowed[b, n : n + CANVAS, : n + CANVAS] = True
        tail = torch.arange(n + CANVAS, width)
        allowed[b, tail, tail] = True  # padding sees only itself
        is_canvas[b, n : n + CANVAS] = True
    h = dec.embed_tokens(ids)
    h = torch.where(is_canvas[..., None], dec.self_conditioning(h, torch.zeros_like(h)), h)
    # The sliding window (4096) exceeds every read, so sliding layers see what full ones see.
    mask = torch.zeros((batch, 1, width, width), dtype=h.dtype).masked_fill(
        ~allowed[:, None], torch.finfo(h.dtype).min
    )
    emb = {lt: dec.rotary_emb(h, pos, lt) for lt in dec.unique_layer_types}
    for i, layer in enumerate(dec.layers[: tcfg.num_hidden_layers]):
        h = layer(h, position_embeddings=emb[tcfg.layer_types[i]], attention_mask=mask, position_ids=pos)
    h = dec.norm(h)
    slot0 = h[torch.arange(batch), torch.tensor(lens)]
    logits = model.lm_head(slot0).float()
    cap = model.final_logit_softcapping
    return torch.tanh(logits / cap) * cap


def corpus(renderer_text, seed: int, n: int) -> list[str]:
    """Rendered user turns (plus the chat template's words) to train the tokenizer on."""
    stream = toy_task.train_stream(seed)
    out = []
    for _ in range(n):
        state, kind, instructions, options, *_ = next(stream)
        out.append(f"{state}\n\n{renderer_text(kind, instructions, options)[0]}\nuser\nmodel\nthought")
    return out


def build_init(out: Path, args: argparse.Namespace) -> None:
    """A random-weight model of the toy's size with the task's tokenizer, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    ids = tiny_model.write_tokenizer(out, args.vocab, corpus(question_text, args.seed + 1, 4000))
    tiny_model.check_tokenizer(out)
    shape = argparse.Namespace(
        seed=args.seed, vocab=args.vocab, hidden=args.hidden, intermediate=args.hidden * 2,
        layers=args.layers, heads=args.heads, head_dim=32, experts=4, moe_intermediate=args.hidden // 2,
        canvas=CANVAS, sliding_window=4096,
    )  # fmt: skip
    tiny_model.write_model(out, ids, shape)


def dev_accuracy(model, renderer: Renderer, n: int) -> dict[str, dict[str, float]]:
    """Accuracy per question on the dev split, options in canonical and reversed order."""
    import torch

    result: dict[str, dict[str, float]] = {}
    items = toy_task.alerts("dev", n)
    for name in toy_task.INSTRUCTIONS:
        result[name] = {}
        for order in ("canonical", "reversed"):
            if name == "page" and order == "reversed":
                continue
            right = 0
            for start in range(0, n, 32):
                batch = items[start : start + 32]
                reads, answers = [], []
                for alert in batch:
                    if name == "page":
                        kind, options, answer = "noul", ["yes", "no"], "yes" if alert["page"] else "no"
                    else:
                        kind = "choice" if name == "team" else "score"
                        options = list(toy_task.TEAMS if name == "team" else toy_task.LEVELS)
                        answer = alert[name]
                    if order == "reversed":
                        options.reverse()
                    reads.append(renderer.read(alert["state"], kind, toy_task.INSTRUCTIONS[name], options))
                    answers.append(options.index(answer))
                with torch.no_grad():
                    logits = read_logits(model, [r[0] for r in reads], [r[1] for r in reads])
                for (_p, _c, labels), logit, answer in zip(reads, logits, answers, strict=True):
                    right += int(int(logit[labels].argmax()) == answer)
            result[name][order] = round(right / n, 4)
    return result


def save(model, out: Path) -> str:
    """bf16 decoder weights (encoder and lm_head are tied to them); returns their sha256."""
    import torch
    from safetensors.torch import save_file

    tensors = {
        name: t.detach().to(torch.bfloat16).clone().contiguous()
        for name, t in model.state_dict().items()
        if "vision" not in name and not name.startswith("model.encoder.") and name != "lm_head.weight"
    }
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    return hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()


def write_manifest(out: Path) -> None:
    """manifest.json in the kit's format (deploy/runtime/weights.py: name, size, sha256 per file), so that
    `dgemma dev` verifies the checkpoint, and `dgemma weights` moves it, like any other."""
    files = sorted(f for f in out.iterdir() if f.is_file() and f.name != "manifest.json")
    entries = [
        {"name": f.name, "size": f.stat().st_size, "sha256": hashlib.sha256(f.read_bytes()).hexdigest()}
        for f in files
    ]
    (out / "manifest.json").write_text(json.dumps({"created": "", "files": entries}, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--steps", type=int, default=4000, help="the cosine schedule's length")
    parser.add_argument(
        "--time-limit", type=float, default=1740.0,
        help="a safety net: stop (and save) after this many seconds; a run it stops is not reproducible",
    )  # fmt: skip
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument(
        "--qk-norm-init",
        type=float,
        default=0.3,
        help="q/k-norm scales at init (attention uses scaling 1.0: unit scales saturate it)",
    )
    parser.add_argument(
        "--curriculum",
        type=float,
        default=0.3,
        help="share of the schedule over which canonical-order examples fade from all to none",
    )
    parser.add_argument("--dev", type=int, default=300, help="dev alerts scored at the end (0: none)")
    parser.add_argument("--log-every", type=int, default=50)
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    out: Path = args.out_dir
    build_init(out, args)
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    renderer = Renderer(tokenizer, args.vocab)
    model = load_model(out)
    model.train()
    with torch.no_grad():
        for name, module in model.named_modules():
            if name.endswith((".q_norm", ".k_norm")):
                module.weight.fill_(args.qk_norm_init)
    params = [p for n, p in model.named_parameters() if "vision" not in n]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            min(1.0, (s + 1) / args.warmup) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps))
        ),
    )
    step = 0
    fade = max(1.0, args.curriculum * args.steps)
    stream = toy_task.train_stream(args.seed, lambda: max(0.0, 1.0 - step / fade))
    log: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "steps": []}
    log["parameters"] = sum(p.numel() for p in model.model.decoder.parameters())
    started = time.monotonic()
    totals: dict[str, list[float]] = {}
    prompt_tokens = 0
    for step in range(1, args.steps + 1):
        reads, targets, kinds = [], [], []
        for _ in range(args.batch):
            state, kind, instructions, options, answer, shuffled = next(stream)
            prompt, canvas, labels = renderer.read(state, kind, instructions, options)
            reads.append((prompt, canvas))
            targets.append(labels[answer])
            kinds.append(f"{kind}{'*' if shuffled else ''}")
            prompt_tokens += len(prompt)
        logits = read_logits(model, [r[0] for r in reads], [r[1] for r in reads])
        target = torch.tensor(targets)
        losses = torch.nn.functional.cross_entropy(logits, target, reduction="none")
        loss = losses.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        right = (logits.argmax(-1) == target).tolist()
        for kind, item_loss, ok in zip(kinds, losses.tolist(), right, strict=True):
            totals.setdefault(kind, []).extend([item_loss, float(ok)])
        elapsed = time.monotonic() - started
        if step % args.log_every == 0:
            row: dict[str, Any] = {"step": step, "seconds": round(elapsed, 1)}
            for kind, vals in sorted(totals.items()):
                row[kind] = {"loss": round(sum(vals[0::2]) / len(vals[0::2]), 4),
                             "acc": round(sum(vals[1::2]) / len(vals[1::2]), 4)}  # fmt: skip
            log["steps"].append(row)
            accs = " ".join(f"{k} {v['acc']:.2f}" for k, v in row.items() if isinstance(v, dict))
            print(f"step {step}/{args.steps} {elapsed:.0f}s  train acc (* shuffled): {accs}", flush=True)
            totals = {}
        if elapsed > args.time_limit:
            print(f"time limit reached at step {step}", flush=True)
            log["stopped_by_time_limit"] = True
            break
    log["steps_done"] = step
    log["train_seconds"] = round(time.monotonic() - started, 1)
    log["mean_prompt_tokens"] = round(prompt_tokens / (step * args.batch), 1)
    log["threads"] = args.threads
    model.eval()
    if args.dev:
        log["dev_accuracy"] = dev_accuracy(model, renderer, args.dev)
        print(f"dev accuracy ({args.dev} alerts): {json.dumps(log['dev_accuracy'])}", flush=True)
    log["weights_sha256"] = save(model, out)
    (out / "train_log.json").write_text(json.dumps(log, indent=1) + "\n")
    (out / "README.md").write_text(
        f"# {NAME}: a toy model for exercising the kit, not DiffusionGemma\n\n"
        "DiffusionGemma's architecture at toy size (~1M parameters), trained by\n"
        "deploy/models/scripts/train_toy.py on the synthetic alert-triage task of\n"
        "deploy/models/scripts/toy_task.py (team, severity, page). Its answers mean something on that\n"
        "task only. Training log: train_log.json.\n"
    )
    write_manifest(out)
    print(json.dumps({k: log[k] for k in ("parameters", "steps_done", "train_seconds", "weights_sha256")}))


if __name__ == "__main__":
    main()
