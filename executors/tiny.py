"""Tiny causal LMs built from config with a locally built tokenizer: no model hub needed.

``build_tokenizer`` trains a word-level tokenizer on the job's own texts (whitespace-split
words and punctuation, plus ``[PAD] [BOS] [EOS] [UNK]``); it prepends BOS and never appends
EOS, since a prompt ending in EOS makes generation stop at once (GRPO's rewards then stay 0).
``build_model`` makes a GPT-2 of the given size for that vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

SPECIALS = {"pad_token": "[PAD]", "bos_token": "[BOS]", "eos_token": "[EOS]",
            "unk_token": "[UNK]"}
DEFAULTS = {"n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 256}


def build_tokenizer(texts: Iterable[str], vocab_size: int = 4000) -> Any:
    """A PreTrainedTokenizerFast trained on ``texts``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

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

    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown tiny-gpt2 options {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    sizes = {**DEFAULTS, **options}
    config = GPT2Config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                        eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id, **sizes)
    return GPT2LMHeadModel(config)


__all__ = ["build_model", "build_tokenizer"]
