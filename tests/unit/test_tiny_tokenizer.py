"""The tokenizers built here for tiny models: byte-level BPE gives back exactly the text it
encoded (code keeps its spacing and indentation), word-level does not; options are checked."""

from __future__ import annotations

import pytest

from recursor.executors.tiny import build_model, build_tokenizer

CODE = ("cfr_hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n"
        "    weight = t ** 1.5 / (t ** 1.5 + 1)\n>>>>>>> REPLACE\n### end\n")


def test_a_bytelevel_tokenizer_round_trips_code_exactly() -> None:
    tokenizer = build_tokenizer([CODE] * 4, vocab_size=400, kind="bytelevel")
    ids = tokenizer(CODE)["input_ids"]
    assert ids[0] == tokenizer.bos_token_id
    assert tokenizer.decode(ids, skip_special_tokens=True) == CODE
    unseen = "def f(x):\n\treturn {'a': x}  # ünïcode\n"
    assert tokenizer.decode(tokenizer(unseen)["input_ids"], skip_special_tokens=True) == unseen


def test_the_word_tokenizer_loses_spacing_and_options_are_checked() -> None:
    tokenizer = build_tokenizer([CODE], kind="word")
    assert tokenizer.decode(tokenizer(CODE)["input_ids"], skip_special_tokens=True) != CODE
    with pytest.raises(ValueError, match="unknown tokenizer 'chars'"):
        build_tokenizer([CODE], kind="chars")
    model = build_model(tokenizer, {"tokenizer": "word", "vocab_size": 100, "n_layer": 1})
    assert model.config.n_layer == 1
    with pytest.raises(ValueError, match="unknown tiny-gpt2 options"):
        build_model(tokenizer, {"n_layers": 1})
