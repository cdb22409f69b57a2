"""The inert-corpus comparison (``orchestrator/inert.py``) on built corpora given directly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recursor.executors import JobSpec
from recursor.orchestrator.inert import (
    Built,
    InertCheck,
    compared,
    corpus_only,
    training_content,
)

PARENT = {"recipe.py": "SIZE = 400\n", "harness.py": "H\n"}
PATHS = ["recipe.py", "curriculum.py"]


def _rows(*pairs: tuple[str, str], recipe: str = "r0") -> list[dict[str, Any]]:
    return [{"prompt": p, "completion": c, "provenance": {"recipe": recipe, "harness": "h"}}
            for p, c in pairs]


class Corpora:
    """``build``: the rows each recipe text yields (counting builds); None: a failed build."""

    def __init__(self, by_recipe: Mapping[str, list[dict[str, Any]] | None]) -> None:
        self.by_recipe = by_recipe
        self.built: list[str] = []

    def build(self, files: Mapping[str, str]) -> Built:
        self.built.append(files["recipe.py"])
        rows = self.by_recipe[files["recipe.py"]]
        return (rows, {}, None) if rows is not None else (None, {}, "corpus: it crashed")


def _check(corpora: Corpora, ordered: bool = True) -> InertCheck:
    return InertCheck(corpora.build, lambda rows, files: rows, PARENT, PATHS, ordered)


def test_the_same_rows_under_other_provenance_are_inert() -> None:
    corpora = Corpora({"SIZE = 400\n": _rows(("a", "1"), ("b", "2")),
                       "SIZE = 320\n": _rows(("a", "1"), ("b", "2"), recipe="r1"),
                       "SIZE = 1\n": _rows(("a", "1"), recipe="r2")})
    check = _check(corpora)
    assert check.check({"recipe.py": "SIZE = 320\n"})[0] is True
    inert, built = check.check({"recipe.py": "SIZE = 1\n"})
    assert inert is False and built is not None and built[0] == _rows(("a", "1"), recipe="r2")
    assert corpora.built == ["SIZE = 320\n", "SIZE = 400\n", "SIZE = 1\n"]  # parent once


def test_order_counts_where_the_training_reads_in_order_and_repeats_always() -> None:
    corpora = Corpora({"SIZE = 400\n": _rows(("a", "1"), ("b", "2")),
                       "x\n": _rows(("b", "2"), ("a", "1")),
                       "y\n": _rows(("a", "1"), ("b", "2"), ("b", "2")),
                       "z\n": _rows(("b", "2"), ("b", "2"), ("a", "1"))})
    in_order = _check(corpora)
    assert in_order.check({"recipe.py": "x\n"})[0] is False
    assert in_order.check({"recipe.py": "y\n"})[0] is False
    shuffled = _check(corpora, ordered=False)  # a reorder is only another seed's draw
    assert shuffled.check({"recipe.py": "x\n"})[0] is True
    assert shuffled.check({"recipe.py": "y\n"})[0] is False  # b drawn twice as often
    assert shuffled.check({"recipe.py": "z\n"})[0] is False
    assert compared([("b",), ("a",), ("b",)], False) == [("a",), ("b",), ("b",)]


def test_which_jobs_read_their_rows_in_order() -> None:
    sft = {"kind": "sft", "model": "tiny-gpt2", "data": "d.jsonl"}
    grpo = {"kind": "grpo", "model": "m", "data": "d.jsonl", "reward": "a:b"}
    assert JobSpec(**sft).reads_in_order is False  # transformers samples at random
    assert JobSpec(**sft, config={"train_sampling_strategy": "group_by_length"}
                   ).reads_in_order is False
    assert JobSpec(**sft, config={"train_sampling_strategy": "sequential"}).reads_in_order
    assert JobSpec(**grpo).reads_in_order is False  # TRL's shuffle_dataset defaults on
    assert JobSpec(**grpo, config={"shuffle_dataset": False}).reads_in_order
    assert JobSpec(kind="command", command=["true"]).reads_in_order  # unknown: in order


def test_a_failed_build_on_either_side_is_never_inert() -> None:
    failing = Corpora({"SIZE = 400\n": None, "x\n": None})
    assert _check(failing).check({"recipe.py": "x\n"})[0] is False
    parent_fails = Corpora({"SIZE = 400\n": None, "x\n": _rows(("a", "1"))})
    assert _check(parent_fails).check({"recipe.py": "x\n"})[0] is False


def test_an_edit_beyond_the_corpus_components_builds_nothing() -> None:
    corpora = Corpora({})
    assert _check(corpora).check({"recipe.py": "x\n", "harness.py": "G\n"}) == (False, None)
    assert _check(corpora).check({}) == (False, None)
    assert corpora.built == []


def test_training_content_leaves_out_provenance_only() -> None:
    row = {"prompt": "p", "completion": "c", "target": "t", "provenance": {"recipe": "r"}}
    assert training_content([row]) == [("completion=c", "prompt=p", "target=t")]
    assert corpus_only({"recipe.py": ""}, PATHS) and not corpus_only({"policy.json": ""}, PATHS)


def test_a_proposal_asked_again_is_not_built_again() -> None:
    corpora = Corpora({"SIZE = 400\n": _rows(("a", "1")), "x\n": _rows(("a", "1"))})
    check = _check(corpora)
    assert check.check({"recipe.py": "x\n"})[0] is True
    assert check.check({"recipe.py": "x\n"}) == (True, None)
    assert corpora.built == ["x\n", "SIZE = 400\n"]


def test_two_empty_corpora_are_not_inert() -> None:
    """An empty corpus is the training's error to report ("selected no trajectories")."""
    corpora = Corpora({"SIZE = 400\n": [], "x\n": []})
    assert _check(corpora).check({"recipe.py": "x\n"})[0] is False
