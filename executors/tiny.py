"""Tiny causal LMs built from config with a locally built tokenizer: no model hub needed.

``build_tokenizer`` trains a tokenizer on the job's own texts, plus ``[PAD] [BOS] [EOS]
[UNK]``: word-level by default (whitespace-split words and punctuation; decoding does not
give back the spacing), or byte-level BPE with ``model_options: {tokenizer: bytelevel}``, which
decodes to exactly the text it encoded (what a model that writes code or edits needs). It
prepends BOS and never appends EOS, since a prompt ending in EOS makes generation stop at once
(GRPO's rewards then stay 0). ``build_model`` makes a GPT-2 of the given size for that
vocabulary; ``vocab_size`` in ``model_options`` bounds the tokenizer's vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

SPECIALS = {"pad_token": "[PAD]", "bos_token": "[BOS]", "eos_token": "[EOS]",
            "unk_token": "[UNK]"}
DEFAULTS = {"n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 256}
TOKENIZER_OPTIONS = {"tokenizer": "word", "vocab_size": 4000}  # the tokenizer's, not GPT-2's
TOKENIZERS = ("word", "bytelevel")


def build_tokenizer(texts: Iterable[str], vocab_size: int = 4000, kind: str = "word") -> Any:
    """A PreTrainedTokenizerFast of ``kind`` (``word`` or ``bytelevel``) trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if kind not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {kind!r}; known: {', '.join(TOKENIZERS)}")
    if kind == "bytelevel":
        core = Tokenizer(models.BPE(unk_token=SPECIALS["unk_token"]))
        core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        core.decoder = decoders.ByteLevel()
        trainer: Any = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=list(SPECIALS.values()),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        core = Tokenizer(models.WordLevel(unk_token=SPECIALS["unk_token"]))
        core.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size,
                                            special_tokens=list(SPECIALS.values()))
    core.train_from_iterator(texts, trainer=trainer)
    bos = SPECIALS["bos_token"]
    core.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, core.token_to_id(bos))])
    # transformers leaves this constructor unannotated
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, **SPECIALS)  # type: ignore[no-untyped-call]
    tokenizer.padding_side = "left"  # generation continues on the right
    return tokenizer


def build_model(tokenizer: Any, options: Mapping[str, Any]) -> Any:
    """A freshly initialised GPT-2 sized by ``options`` (n_layer, n_embd, n_head, n_positions)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    known = {*DEFAULTS, *TOKENIZER_OPTIONS}
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown tiny-gpt2 options {sorted(unknown)}; known: {sorted(known)}")
    sizes = {**DEFAULTS, **{k: v for k, v in options.items() if k in DEFAULTS}}
    config = GPT2Config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                        eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id, **sizes)
    return GPT2LMHeadModel(config)


__all__ = ["TOKENIZER_OPTIONS", "build_model", "build_tokenizer"]
