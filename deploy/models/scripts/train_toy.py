"""Train the toy DiffusionGemma on alert triage, exactly as vLLM reads it.

Usage (with the engine venv's python, which has torch and transformers):
    python deploy/models/scripts/train_toy.py [train] OUT_DIR [--steps STEPS] [--time-limit 1740]
        [--threads 2] [--mix MIX.toml] [--device cpu|cuda]
    python deploy/models/scripts/train_toy.py rank [MODEL_DIR] [--threads 2]

`--mix` draws the realistic corpus with a sweep's weights: a TOML shaped as (a part of)
alert_corpus/data/weights.toml, whose entries replace the file's (e.g. `catalogue_share = 0.3`,
`[question_weights] team = 0.6`; alert_corpus.configure). `--device cuda` trains in float32 on the GPU
with deterministic algorithms off: one more draw of the training, not the CPU's weights.
devtools/lab/toy_sweep.py runs sweeps of these. `rank` scores a checkpoint's p(page) on the catalogue's
dev rules without their severity label, as the dev report does (AUC, recall and false pages at 0.4).

Two tasks, mixed in every stretch of the schedule:
  * the kit's real inputs (alert_corpus/): the states the alert router builds from Alertmanager,
    Grafana and Cloud Monitoring payloads, asked the default policy's three questions (read from
    app/alerts/default_policy.toml at training time: the long page question, the team choice with
    the teams' descriptions as criteria, the four severity levels), and SDK-style dict and string
    states asked the README example's questions;
  * the synthetic one-line task of toy_task.py (team / severity / page), which the shipped eval split
    (evals/data/toy-alerts-test.jsonl), `dgemma eval` and `dgemma calibrate` are measured on.

OUT_DIR gets a servable checkpoint: tokenizer (byte-level BPE trained on both tasks' reads, so reads
are ~4x shorter than in bytes), config, bf16 weights (the decoder copy, as tiny_model.py saves
them), train_log.json (loss and accuracy per read kind, dev accuracy per question of each task,
timings, weight hash), README.md and manifest.json (the kit's checkpoint manifest,
deploy/runtime/weights.py, which `dgemma dev` verifies it against). The same arguments and thread
count give the same tokenizer and the same weights up to float rounding (see MKL_NUM_THREADS below).

Each example is one per-question read rendered as vLLM 0.32's DiffusionGemmaCanvasStrategy does:
the state as text (a string as it is, anything else `json.dumps(state, ensure_ascii=False)`, as the
gateway and vLLM's `state_text` both write it), user turn `state + "\\n\\n" + question prompt`
(QuestionType.prompt: "Question: ..." when there are instructions, "A: name - description" option
lines) through the chat template, then the thought block; canvas `[sha256 noise id, <turn|>,
pad x 14]`. One batched pass over `[prompt | canvas]` with a 4D mask (prompt causal, canvas
bidirectional over prompt and canvas, canvas embeddings through self-conditioning with a zero
signal) equals the engine's one read-only denoising step. The loss is cross-entropy over the
vocabulary at canvas slot 0 against the right label's token.
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
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# MKL's own threads split some products differently from one process to the next (measured: about
# 1 process in 20 read different last bits at the first step, on 2 threads); torch's threads stay.
# One MKL thread made 60 of 60 processes agree, at no measurable cost (wall ratio 0.99 on 60 steps).
# But torch.set_num_threads(--threads), in main(), sets MKL's threads too (torch 2.13:
# mkl_get_max_threads() is 1 before it and 2 after), so the runs are the same up to float rounding,
# not always to the byte (tests/deploy/models/test_toy_model.py compares them so).
os.environ["MKL_NUM_THREADS"] = "1"
# The scripts beside this one, and the checkout's root: alert_corpus imports the kit's
# standard-library modules (option orders, the alert state, Go's printing) rather than copying them.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import alert_corpus
import tiny_model
import toy_task

THOUGHT = "<|channel>thought\n<channel|>"
CANVAS = 16
NAME = "dgemma-toy-alerts"
TOY_DIR = Path(__file__).resolve().parents[1] / NAME  # the shipped toy
# A full run's defaults, measured on 2 cores (--threads 2): reads average ~189 tokens (the router's
# states with the policy's questions ~261, the catalogue's ~272, SDK-style ~126, the toy task's ~69;
# ~4 % padding), ~0.95 s a step of 32 reads, so 1,550 steps train in ~25 min (1,479 s; the dev
# scoring adds ~40 s): inside the 30-minute budget, before the --time-limit safety net. Why 32 x
# 1,550 and not 16 x 3,100 (the same time): the team question was learnt at ~40k reads of batches of
# 32 and not at ~28k of 16 (exploratory runs of this script on a GPU, cut at 290 s: dev team 0.95
# against 0.65; evals/alerts/results/toy-sweep-2026-12-02 for what makes it learnt early).
STEPS = 1550
BATCH = 32
VOCAB = 2048  # reads 12 % shorter than at 1,024; 4,096 would take 5 % more off (logits: one slot)
TOY_SHARE = 0.25  # reads of the one-line toy task; the rest are the realistic corpus's
# Realistic reads in the gateway's other option orders once the curriculum is over: the router
# asks in the policy's order, adaptive re-reads (uncertain answers) and debias in others.
REORDERED = 0.15


def state_text(state: Any) -> str:
    """The state as the model reads it: vLLM's `state_text` (the gateway renders the same)."""
    return state if isinstance(state, str) else json.dumps(state, ensure_ascii=False)


def question_text(
    kind: str, instructions: str | None, options: list[str], descriptions: list[str | None] | None = None
) -> tuple[str, list[str]]:
    """vLLM's question prompt (question_types.py, QuestionType.prompt), and each option's label."""
    descriptions = descriptions or [None] * len(options)
    lines = [f"Question: {instructions}"] if instructions else []
    pairs = zip(options, descriptions, strict=True)
    if kind == "choice":
        labels = list(string.ascii_uppercase[: len(options)])
        lines += [f"{lb}: {o} - {d}" if d else f"{lb}: {o}" for lb, (o, d) in zip(labels, pairs, strict=True)]
        lines.append("Answer with the letter of one option only.")
    elif kind == "noul":
        labels = ["yes", "no"]
        # A side without a description still shows its label.
        lines += [f"{lb}: {d}" if d else lb for lb, (_, d) in zip(labels, pairs, strict=True)]
        lines.append("Answer with yes or no only.")
    else:  # a score's levels are names only (ScoreQuestion.parse_options)
        labels = list(string.digits[: len(options)])
        lines += [f"{lb}: {o}" for lb, o in zip(labels, options, strict=True)]
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

    def read(
        self,
        state: Any,
        kind: str,
        instructions: str | None,
        options: list[str],
        descriptions: list[str | None] | None = None,
    ):
        """(prompt ids with the thought block, canvas ids, label ids in option order)."""
        qtext, labels = question_text(kind, instructions, options, descriptions)
        ids = self.tok.apply_chat_template(
            [{"role": "user", "content": f"{state_text(state)}\n\n{qtext}"}],
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


Read = tuple[Any, str, "str | None", list[str], "list[str | None] | None", int, str]


def mixed_stream(
    seed: int, policy: dict[str, Any], toy_share: float, progress: Callable[[], float]
) -> Iterator[Read]:
    """Endless reads (state, kind, instructions, options, descriptions, right index, tag): the toy
    task's a `toy_share` of the time, else the realistic corpus's. `progress()` is the share of the
    curriculum done (0 to 1): over it, the toy task's canonical-order share fades out (see
    toy_task.train_stream) and the realistic reads' other option orders fade in."""
    toy = toy_task.train_stream(seed, lambda: max(0.0, 1.0 - progress()))
    real = alert_corpus.train_stream(seed, policy, lambda: REORDERED * min(1.0, progress()))
    rng = random.Random(f"toy-mix:{seed}")
    while True:
        if rng.random() < toy_share:
            state, kind, instructions, options, answer, shuffled = next(toy)
            yield state, kind, instructions, options, None, answer, f"toy:{kind}{'*' if shuffled else ''}"
        else:
            yield next(real)


def corpus(seed: int, n: int, policy: dict[str, Any], toy_share: float) -> list[str]:
    """Rendered user turns (plus the chat template's words) to train the tokenizer on."""
    stream = mixed_stream(seed, policy, toy_share, lambda: 0.5)
    out = []
    for _ in range(n):
        state, kind, instructions, options, descriptions, *_ = next(stream)
        qtext = question_text(kind, instructions, options, descriptions)[0]
        out.append(f"{state_text(state)}\n\n{qtext}\nuser\nmodel\nthought")
    return out


def build_init(out: Path, args: argparse.Namespace, policy: dict[str, Any]) -> None:
    """A random-weight model of the toy's size with the tasks' tokenizer, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    texts = corpus(args.seed + 1, args.tokenizer_texts, policy, args.toy_share)
    ids = tiny_model.write_tokenizer(out, args.vocab, texts)
    tiny_model.check_tokenizer(out)
    shape = argparse.Namespace(
        seed=args.seed, vocab=args.vocab, hidden=args.hidden, intermediate=args.hidden * 2,
        layers=args.layers, heads=args.heads, head_dim=32, experts=4, moe_intermediate=args.hidden // 2,
        canvas=CANVAS, sliding_window=4096,
    )  # fmt: skip
    tiny_model.write_model(out, ids, shape)


def batches(stream: Iterator[Read], renderer: Renderer, size: int, pool: int, seed: int) -> Iterator[list]:
    """Batches of rendered reads of similar length: `pool` batches' worth drawn, sorted by length,
    cut, and given out in a seeded order. A batch costs its longest read times its size, and the
    reads run from ~60 tokens (the toy task) to ~400 (a Cloud Monitoring incident)."""
    rng = random.Random(f"toy-batches:{seed}")
    while True:
        items = []
        for _ in range(size * pool):
            state, kind, instructions, options, descriptions, answer, tag = next(stream)
            prompt, canvas, labels = renderer.read(state, kind, instructions, options, descriptions)
            items.append((prompt, canvas, labels[answer], tag))
        items.sort(key=lambda item: len(item[0]))  # stable: ties keep the stream's order
        cut = [items[i : i + size] for i in range(0, len(items), size)]
        rng.shuffle(cut)
        yield from cut


def probs(model, renderer: Renderer, reads: list[tuple], batch: int = 32) -> list[list[float]]:
    """Each read's probabilities over its options, in the reads' order (state, kind, instructions,
    options, descriptions, ...)."""
    import torch

    rendered = sorted(enumerate(renderer.read(*r[:5]) for r in reads), key=lambda item: len(item[1][0]))
    out: list[list[float]] = [[] for _ in reads]
    for start in range(0, len(rendered), batch):  # similar lengths share a batch
        chunk = rendered[start : start + batch]
        with torch.no_grad():
            logits = read_logits(model, [r[1][0] for r in chunk], [r[1][1] for r in chunk])
        for (i, (_p, _c, labels)), logit in zip(chunk, logits, strict=True):
            out[i] = torch.softmax(logit[labels], -1).tolist()
    return out


def accuracy(probs: list[list[float]], reads: list[tuple]) -> float:
    """The share of reads whose most probable option is the right one (each read's index 5)."""
    right = sum(int(max(range(len(p)), key=p.__getitem__) == r[5]) for p, r in zip(probs, reads, strict=True))
    return round(right / len(reads), 4)


def _score(model, renderer: Renderer, reads: list[tuple], batch: int = 32) -> float:
    """Accuracy of (state, kind, instructions, options, descriptions, right index) reads."""
    return accuracy(probs(model, renderer, reads, batch), reads)


def page_ranking(p_page: list[float], pages: list[bool], threshold: float = 0.4) -> dict[str, float]:
    """How well p(page) ranks the alerts that should page: AUC (the chance that a page outranks a
    non-page), and recall and false pages at `threshold` (the default policy pages from its uncertain
    band's floor, 0.4)."""
    pos = [p for p, page in zip(p_page, pages, strict=True) if page]
    neg = [p for p, page in zip(p_page, pages, strict=True) if not page]
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return {
        "auc": round(wins / (len(pos) * len(neg)), 4) if pos and neg else float("nan"),
        "recall": round(sum(p >= threshold for p in pos) / len(pos), 4) if pos else float("nan"),
        "false_pages": round(sum(p >= threshold for p in neg) / len(neg), 4) if neg else float("nan"),
    }


def dev_accuracy(model, renderer: Renderer, n: int, policy: dict[str, Any]) -> dict[str, Any]:
    """Accuracy per question on each dev split: the toy task (canonical and reversed options), the
    router's states with the default policy's questions (the policy's order, and reversed: what an
    adaptive re-read sends), SDK-style states with the README example's questions, and the public
    catalogue's dev rules without their severity label."""
    result: dict[str, Any] = {"toy": {}, "policy": {}, "sdk": {}}
    items = toy_task.alerts("dev", n)
    for name in toy_task.INSTRUCTIONS:
        for order in ("canonical", "reversed"):
            if name == "page" and order == "reversed":
                continue
            reads = []
            for alert in items:
                if name == "page":
                    kind, options, answer = "noul", ["yes", "no"], "yes" if alert["page"] else "no"
                else:
                    kind = "choice" if name == "team" else "score"
                    options = list(toy_task.TEAMS if name == "team" else toy_task.LEVELS)
                    answer = alert[name]
                if order == "reversed":
                    options.reverse()
                reads.append(
                    (alert["state"], kind, toy_task.INSTRUCTIONS[name], options, None, options.index(answer))
                )
            result["toy"].setdefault(name, {})[order] = _score(model, renderer, reads)
    for task, questions, examples in (
        ("policy", policy, [(e["state"], e) for e in alert_corpus.examples("dev", n)]),
        ("sdk", alert_corpus.SDK_QUESTIONS, [(e["state"], e) for e in alert_corpus.sdk_examples("dev", n)]),
    ):
        for name, q in questions.items():
            for order in ("canonical", "reversed"):
                if order == "reversed" and (name == "page" or task == "sdk"):
                    continue
                perm = tuple(range(len(q.options)))[:: 1 if order == "canonical" else -1]
                reads = [
                    alert_corpus.read_of(state, q, alert_corpus.answer_index(q, name, answers), perm, "")[:6]
                    for state, answers in examples
                ]
                result[task].setdefault(name, {})[order] = _score(model, renderer, reads)
    result["catalogue"] = catalogue_dev(model, renderer, policy)
    return result


def catalogue_dev(
    model, renderer: Renderer, policy: dict[str, Any], names: tuple[str, ...] = ("page", "severity")
) -> dict[str, Any]:
    """The catalogue's dev rules (never trained on) without their severity label, the level read
    from the rule's own words as in the eval's --without-severity run: each question's accuracy, and
    for page how p(page) ranks the rules that should page (`page_ranking`)."""
    result: dict[str, Any] = {}
    rows = alert_corpus.catalogue("dev")
    for name in names:
        q = policy[name]
        order = tuple(range(len(q.options)))
        reads = [
            alert_corpus.read_of(
                alert_corpus.unlabelled(row["state"]), q,
                alert_corpus.answer_index(q, name, alert_corpus.catalogue_answers(row)), order, "",
            )[:6]
            for row in rows
        ]  # fmt: skip
        found = probs(model, renderer, reads)
        result[name] = {"unlabelled": accuracy(found, reads)}
        if name == "page":  # the eval's --without-severity figures: recall, and at what noise
            yes = alert_corpus.answer_index(q, "page", {"page": True})
            pages = [alert_corpus.needs_page(row["severity"]) for row in rows]
            result["page"]["ranking"] = page_ranking([p[yes] for p in found], pages)
    return result


def save(model, out: Path) -> str:
    """bf16 decoder weights (encoder and lm_head are tied to them); returns their sha256."""
    import torch
    from safetensors.torch import save_file

    tensors = {  # on the CPU, whatever the training's device
        name: t.detach().to(torch.bfloat16).clone().contiguous().cpu()
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


def build_parser() -> argparse.ArgumentParser:
    """`train` (the default: `train_toy.py OUT_DIR ...` trains) and `rank`."""
    top = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    actions = top.add_subparsers(dest="action", required=True)
    parser = actions.add_parser("train", help="train the toy into OUT_DIR (the default subcommand)")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--steps", type=int, default=STEPS, help="the cosine schedule's length")
    parser.add_argument(
        "--time-limit", type=float, default=1740.0,
        help="a safety net: stop (and save) after this many seconds; a run it stops is not reproducible",
    )  # fmt: skip
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=VOCAB)
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
    parser.add_argument("--toy-share", type=float, default=TOY_SHARE, help="share of reads from toy_task.py")
    parser.add_argument(
        "--policy", type=Path, default=alert_corpus.POLICY, help="the policy whose questions are trained"
    )
    parser.add_argument(
        "--tokenizer-texts", type=int, default=6000, help="rendered reads the tokenizer is trained on"
    )
    parser.add_argument("--pool", type=int, default=32, help="batches drawn at once and sorted by length")
    parser.add_argument(
        "--dev", type=int, default=300, help="dev alerts scored at the end, per task (0: none)"
    )
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument(
        "--mix", type=Path,
        help="a TOML of alert_corpus/data/weights.toml's entries to draw with instead of the file's",
    )  # fmt: skip
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu",
        help="cuda: float32 on the GPU, deterministic algorithms off (a run is one draw, not reproducible)",
    )  # fmt: skip
    rank = actions.add_parser(
        "rank", help="p(page) of a checkpoint on the catalogue's dev rules without severity (JSON on stdout)"
    )
    rank.add_argument("model_dir", type=Path, nargs="?", default=TOY_DIR, help="default: the shipped toy")
    rank.add_argument("--threads", type=int, default=2)
    rank.add_argument("--vocab", type=int, default=VOCAB, help="the checkpoint's vocabulary (canvas noise)")
    rank.add_argument("--policy", type=Path, default=alert_corpus.POLICY)
    return top


def configure_mix(path: Path | None) -> dict[str, Any]:
    """Draw the corpus with the mix in `path` (none: the data as it is); the mix, for the log."""
    if path is None:
        return {}
    try:
        mix = tomllib.loads(path.read_text())
        alert_corpus.configure(mix)
    except (OSError, tomllib.TOMLDecodeError, ValueError) as e:
        raise SystemExit(f"--mix {path}: {e}") from e
    return mix


def rank(args: argparse.Namespace) -> dict[str, float]:
    """The page figures of `catalogue_dev` for a saved checkpoint (its bf16 weights, on the CPU):
    accuracy, AUC, and recall and false pages at 0.4."""
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    model = load_model(args.model_dir)
    model.eval()
    renderer = Renderer(AutoTokenizer.from_pretrained(str(args.model_dir)), args.vocab)
    page = catalogue_dev(model, renderer, alert_corpus.policy_questions(args.policy), ("page",))["page"]
    return {"accuracy": page["unlabelled"], **page["ranking"]}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] not in ("train", "rank", "-h", "--help"):
        argv = ["train", *argv]  # `train_toy.py OUT_DIR ...`: training, as it always was
    args = build_parser().parse_args(argv)
    if args.action == "rank":
        print(json.dumps(rank(args)))
    else:
        train(args)


def train(args: argparse.Namespace) -> None:
    """Train, score the dev splits, and write the checkpoint into args.out_dir."""
    mix = configure_mix(args.mix)  # before torch's import: a bad mix fails in a moment
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.device == "cpu":
        torch.use_deterministic_algorithms(True)
    else:  # every tensor made on the GPU; some CUDA kernels have no deterministic version
        torch.set_default_device(args.device)
    out: Path = args.out_dir
    policy = alert_corpus.policy_questions(args.policy)
    build_init(out, args, policy)
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
    stream = mixed_stream(args.seed, policy, args.toy_share, lambda: step / fade)
    feed = batches(stream, renderer, args.batch, args.pool, args.seed)
    log: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items() if k != "action"}, "steps": []}
    if mix:
        log["mix"] = mix
    log["parameters"] = sum(p.numel() for p in model.model.decoder.parameters())
    started = time.monotonic()
    totals: dict[str, list[float]] = {}
    tokens: dict[str, list[int]] = {}
    padded = 0
    for step in range(1, args.steps + 1):
        batch = next(feed)
        reads = [(prompt, canvas) for prompt, canvas, _, _ in batch]
        targets = [target for _, _, target, _ in batch]
        tags = [tag for *_, tag in batch]
        for (prompt, _), tag in zip(reads, tags, strict=True):
            tokens.setdefault(tag.split(":")[0], []).append(len(prompt))
        padded += max(len(p) for p, _ in reads) * len(reads)
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
        for tag, item_loss, ok in zip(tags, losses.tolist(), right, strict=True):
            totals.setdefault(tag, []).extend([item_loss, float(ok)])
        elapsed = time.monotonic() - started
        if step % args.log_every == 0:
            row: dict[str, Any] = {"step": step, "seconds": round(elapsed, 1)}
            for tag, vals in sorted(totals.items()):
                n = len(vals) // 2
                row[tag] = {
                    "loss": round(sum(vals[0::2]) / n, 4),
                    "acc": round(sum(vals[1::2]) / n, 4),
                    "n": n,
                }
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
    every = [n for lengths in tokens.values() for n in lengths]
    log["mean_prompt_tokens"] = round(sum(every) / len(every), 1)
    log["mean_prompt_tokens_by_task"] = {
        task: round(sum(v) / len(v), 1) for task, v in sorted(tokens.items())
    }
    log["padding_overhead"] = round(padded / sum(every) - 1, 3)  # computed beyond the reads' own tokens
    log["threads"] = args.threads
    model.eval()
    if args.dev:
        dev_started = time.monotonic()
        log["dev_accuracy"] = dev_accuracy(model, renderer, args.dev, policy)
        log["dev_seconds"] = round(time.monotonic() - dev_started, 1)
        for task, accs in log["dev_accuracy"].items():
            print(f"dev accuracy, {task} ({args.dev} alerts): {json.dumps(accs)}", flush=True)
    log["weights_sha256"] = save(model, out)
    (out / "train_log.json").write_text(json.dumps(log, indent=1) + "\n")
    (out / "README.md").write_text(
        f"# {NAME}: a toy model for exercising the kit, not DiffusionGemma\n\n"
        "DiffusionGemma's architecture at toy size (~1M parameters), trained by\n"
        "deploy/models/scripts/train_toy.py on alert triage: the synthetic alert-triage task of\n"
        "deploy/models/scripts/toy_task.py (team, severity, page), and the kit's own inputs from\n"
        "deploy/models/scripts/alert_corpus.py (the alert router's states from Alertmanager, Grafana\n"
        "and Cloud Monitoring payloads, asked the default policy's questions; SDK-style states asked\n"
        "the README example's). Its answers mean something on those synthetic alerts only.\n"
        "Training log: train_log.json.\n"
    )
    write_manifest(out)
    print(json.dumps({k: log[k] for k in ("parameters", "steps_done", "train_seconds", "weights_sha256")}))


if __name__ == "__main__":
    main()
