"""The policy: a tiny causal LM checkpoint, completing a batch of prompts greedily (or sampled,
for the support measures).

Prompts longer than the model's context are cut from the left (the newest text is kept), so a
harness that renders too much loses the question first: its context budget is its own problem.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MAX_NEW_TOKENS = 3
# What a policy's first use imports (about 4 s on a 2-core machine), imported once ahead of
# runs by the process sandbox's warm template (``sandbox/_template``), so that no evaluation
# pays it; a checkpoint of another architecture imports its own modules as it loads.
WARM_IMPORTS = ("torch", "transformers", "transformers.modeling_utils",
                "transformers.generation.utils", "transformers.models.auto.modeling_auto",
                "transformers.models.auto.tokenization_auto",
                "transformers.models.gpt2.modeling_gpt2", "transformers.tokenization_utils_base")
BATCH = 64


class Policy:
    def __init__(self, checkpoint: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.manual_seed(0)
        self.torch = torch
        self.tokenizer: Any = AutoTokenizer.from_pretrained(checkpoint)
        self.tokenizer.padding_side = "left"
        self.model: Any = AutoModelForCausalLM.from_pretrained(checkpoint)
        self.model.eval()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
        self.context = int(self.model.config.n_positions) - MAX_NEW_TOKENS

    def complete(self, prompts: Sequence[str]) -> list[str]:
        """Greedy completions (the evaluation's; deterministic)."""
        out: list[str] = []
        for start in range(0, len(prompts), BATCH):
            out += self._batch(list(prompts[start:start + BATCH]))
        return out

    def sampler(self, seed: int) -> Callable[[Sequence[str]], list[str]]:
        """Completions sampled at temperature 1 from the full distribution, seeded: the
        support measures' (pass@k, diversity) draws; the same seed gives the same draws."""
        generator = self.torch.Generator().manual_seed(seed)

        def complete(prompts: Sequence[str]) -> list[str]:
            self.torch.manual_seed(int(self.torch.randint(0, 2 ** 31, (1,),
                                                          generator=generator)))
            out: list[str] = []
            for start in range(0, len(prompts), BATCH):
                out += self._batch(list(prompts[start:start + BATCH]), sample=True)
            return out

        return complete

    def _batch(self, prompts: list[str], sample: bool = False) -> list[str]:
        ids = [self.tokenizer(p)["input_ids"][-self.context:] for p in prompts]
        width = max(len(i) for i in ids)
        pad = self.tokenizer.pad_token_id
        input_ids = self.torch.tensor([[pad] * (width - len(i)) + i for i in ids])
        mask = self.torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids])
        with self.torch.no_grad():
            generated = self.model.generate(input_ids=input_ids, attention_mask=mask,
                                            max_new_tokens=MAX_NEW_TOKENS,
                                            pad_token_id=pad, **_decoding(sample))
        new = generated[:, width:]
        return [self.tokenizer.decode(row, skip_special_tokens=True) for row in new]


def _decoding(sample: bool) -> dict[str, Any]:
    if sample:
        return {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
    return {"do_sample": False}


def readable_by_all(root: Path) -> None:
    """Make a checkpoint readable by any user (safetensors writes its weights 0600): the
    sandbox runs evaluations as an unprivileged uid under a root controller. A policy is no
    secret from candidates, who run it anyway."""
    root.chmod(0o755)
    for path in root.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def write_untrained(folder: Path, model_options: dict[str, Any],
                    build_tokenizer: Callable[[list[str]], Any],
                    build_model: Callable[[Any, dict[str, Any]], Any]) -> None:
    """Save a freshly initialised tiny GPT-2 whose tokenizer knows every name and the seed
    harness's words: a stand-in policy for tests and benchmarks of the harness's side.

    The builders are passed in (``recursor.executors.tiny``'s, in the tests and benchmarks):
    a task never imports an executor, the component that owns model building."""
    from recursor.tasks.worlds import world

    names = [n for kind in world.POOL_SIZES for n in world.name_pool(kind)]
    words = "question : who or what is the of ? observation : none action : search open answer"
    tokenizer = build_tokenizer([" ".join(names), words + " results , 1 2 3 4 5 6"])
    model = build_model(tokenizer, model_options)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    readable_by_all(folder)


__all__ = ["MAX_NEW_TOKENS", "Policy", "readable_by_all", "write_untrained"]
