"""Build the tiny random-weight DiffusionGemma that the local stack and CI serve.

Usage (with the engine venv's python, which has torch, transformers and tokenizers):
    python deploy/models/scripts/tiny_model.py OUT_DIR [--seed 0] [--canvas 16]

The checkpoint has DiffusionGemma's real architecture and tensor names (created by transformers'
own DiffusionGemmaForBlockDiffusion, with fused MoE experts), about 180k parameters, and a
byte-level BPE tokenizer with the Gemma-4 special tokens in which every label vLLM reads (A-Z,
0-9, yes, no) is one distinct token. The weights are random: answers carry no meaning.
The same arguments give byte-identical files; `sha256` of every file is printed.

Shaped by what vLLM 0.32 needs:
  * `canvas_length` on the top-level config makes vLLM treat it as a diffusion model;
  * one head_dim on every layer, so vLLM's Gemma4 check does not force the TRITON_ATTN backend
    (which needs a GPU);
  * `vision_config: null`: transformers cannot initialise the model without a vision tower, so a
    throwaway 1-layer tower is built for the random init and not saved;
  * generation_config.json holds the diffusion sampler settings that the model state requires.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = [
    "<pad>", "<eos>", "<bos>", "<unk>", "<mask>",
    "<|turn>", "<turn|>", "<|channel>", "<channel|>",
    "<|image>", "<image|>", "<|image|>", "<image_soft_token>",
    "<|video|>", "<|audio|>",
]  # fmt: skip
# Words merged into single tokens: the noul labels first, then chat-template words.
MERGED_WORDS = ["yes", "no", "Yes", "No", "model", "user", "system", "thought"]
# Gemma-4 style turns. Newlines are string literals: Jinja's `{%-` would trim them.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<|turn>' + role + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<turn|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|turn>model\\n' }}{% endif %}"
)
LABELS = [list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), ["yes", "no"], list("0123456789")]


def write_tokenizer(out: Path, vocab_size: int, corpus: list[str] | None = None) -> dict[str, int]:
    """Write tokenizer files; return the special tokens' ids.

    Without a corpus: bytes plus a few merged words (the random model). With one: byte-level BPE
    trained on it up to `vocab_size`, so the toy model's reads are ~3x shorter than in bytes.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    if corpus is None:
        vocab: dict[str, int] = {}
        for token in [*SPECIAL_TOKENS, *sorted(pre_tokenizers.ByteLevel.alphabet())]:
            vocab[token] = len(vocab)
        merges: list[tuple[str, str]] = []
        for word in MERGED_WORDS:
            prefix = word[0]
            for ch in word[1:]:
                merges.append((prefix, ch))
                prefix += ch
                vocab.setdefault(prefix, len(vocab))
        if len(vocab) > vocab_size:
            raise SystemExit(f"--vocab {vocab_size} is smaller than the {len(vocab)} tokens needed")
        # Pad so that every id the model can emit decodes to something.
        for i in range(vocab_size - len(vocab)):
            vocab[f"<unused_{i}>"] = len(vocab)
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    else:
        tok = Tokenizer(models.BPE(fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    if corpus is not None:
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )  # fmt: skip
        tok.train_from_iterator(corpus, trainer)
        vocab = tok.get_vocab()
        if len(vocab) != vocab_size:
            raise SystemExit(f"the corpus gave {len(vocab)} tokens, not {vocab_size}")
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIAL_TOKENS])
    tok.save(str(out / "tokenizer.json"))

    special = {
        "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
        "unk_token": "<unk>", "mask_token": "<mask>",
    }  # fmt: skip
    added = {
        str(vocab[s]): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                        "single_word": False, "special": True}
        for s in SPECIAL_TOKENS
    }  # fmt: skip
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **special,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "padding_side": "left",
        "added_tokens_decoder": added,
        "chat_template": CHAT_TEMPLATE,
    }
    _write_json(out / "tokenizer_config.json", config)
    _write_json(out / "special_tokens_map.json", special)
    return {s: vocab[s] for s in SPECIAL_TOKENS}


def check_tokenizer(out: Path) -> None:
    """Fail unless every label is one distinct token and the special tokens are single ids."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out))
    for labels in LABELS:
        ids = [tok.encode(label, add_special_tokens=False) for label in labels]
        if any(len(i) != 1 for i in ids) or len({i[0] for i in ids}) != len(ids):
            raise SystemExit(f"labels are not distinct single tokens: {dict(zip(labels, ids, strict=False))}")
    for special in ("<turn|>", "<|channel>", "<channel|>"):
        if len(tok.encode(special, add_special_tokens=False)) != 1:
            raise SystemExit(f"{special} is not a single token")
    if tok.pad_token_id is None:
        raise SystemExit("the tokenizer has no pad token")


def write_model(out: Path, ids: dict[str, int], args: argparse.Namespace) -> int:
    """Write config.json, generation_config.json and model.safetensors; return the parameter count."""
    import torch
    from safetensors.torch import save_file
    from transformers import DiffusionGemmaConfig
    from transformers.models.diffusion_gemma.modeling_diffusion_gemma import (
        DiffusionGemmaForBlockDiffusion,
    )

    layer_types = ["sliding_attention"] * (args.layers - 1) + ["full_attention"]
    text_config = {
        "vocab_size": args.vocab,
        "hidden_size": args.hidden,
        "intermediate_size": args.intermediate,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads,
        "num_key_value_heads": 1,
        "head_dim": args.head_dim,
        "global_head_dim": args.head_dim,
        "max_position_embeddings": 4096,
        "sliding_window": args.sliding_window,
        "layer_types": layer_types,
        "pad_token_id": ids["<pad>"],
        "eos_token_id": ids["<eos>"],
        "bos_token_id": ids["<bos>"],
        "tie_word_embeddings": True,
        # The released 26B-A4B carries a routed MoE beside the dense MLP in every layer.
        "num_experts": args.experts,
        "top_k_experts": 2,
        "moe_intermediate_size": args.moe_intermediate,
    }
    common: dict[str, Any] = {
        "text_config": text_config,
        "boi_token_id": ids["<|image>"],
        "eoi_token_id": ids["<image|>"],
        "image_token_id": ids["<|image|>"],
        "canvas_length": args.canvas,
        "tie_word_embeddings": True,
    }
    throwaway_vision = {
        "model_type": "gemma4_vision", "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 16,
    }  # fmt: skip
    torch.manual_seed(args.seed)
    model = DiffusionGemmaForBlockDiffusion(
        DiffusionGemmaConfig(vision_config=throwaway_vision, **common)
    ).to(torch.bfloat16)
    # Encoder and decoder share every backbone tensor and lm_head is tied to the embedding, so only
    # the decoder copy is saved; vLLM's hf_to_vllm_mapper maps model.decoder.* to model.*.
    tensors = {
        name: t.detach().clone().contiguous()
        for name, t in model.state_dict().items()
        if "vision" not in name and not name.startswith("model.encoder.") and name != "lm_head.weight"
    }
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})

    config = DiffusionGemmaConfig(vision_config=None, **common)
    config.architectures = ["DiffusionGemmaForBlockDiffusion"]
    config.dtype = "bfloat16"
    config.pad_token_id = ids["<pad>"]
    config.eos_token_id = [ids["<eos>"], ids["<turn|>"]]
    config.bos_token_id = ids["<bos>"]
    config.save_pretrained(str(out))

    _write_json(
        out / "generation_config.json",
        {
            "_from_model_config": False,
            "bos_token_id": ids["<bos>"],
            "eos_token_id": [ids["<eos>"], ids["<turn|>"]],
            "pad_token_id": ids["<pad>"],
            "max_new_tokens": 256,
            "max_denoising_steps": 8,
            "sampler_config": {"_cls_name": "EntropyBoundSamplerConfig", "entropy_bound": 0.1},
            "t_min": 0.4,
            "t_max": 0.8,
            "stability_threshold": 1,
            "confidence_threshold": 0.005,
        },
    )
    return sum(t.numel() for t in tensors.values())


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--intermediate", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--experts", type=int, default=4)
    parser.add_argument("--moe-intermediate", type=int, default=32)
    parser.add_argument("--canvas", type=int, default=16)
    # Above the engine's max-model-len, so HF and vLLM apply the window the same way.
    parser.add_argument("--sliding-window", type=int, default=4096)
    args = parser.parse_args()

    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(out, args.vocab)
    check_tokenizer(out)
    n_params = write_model(out, ids, args)
    # Say what it is, beside the weights, for anyone who finds the directory.
    (out / "README.md").write_text(
        "# Tiny random-weight DiffusionGemma\n\n"
        f"Generated by deploy/models/scripts/tiny_model.py (seed {args.seed}). Real architecture and tensor\n"
        "names, random weights: answers carry no meaning. For local development and tests only.\n"
    )
    for f in sorted(out.iterdir()):
        print(f"{hashlib.sha256(f.read_bytes()).hexdigest()[:16]}  {f.name}")
    print(f"wrote {out}: {n_params} parameters, vocab {args.vocab}, canvas {args.canvas}")


if __name__ == "__main__":
    main()
