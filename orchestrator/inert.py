"""Inert corpus changes: a training slot's proposal that edits only what shapes the training
corpus (the files of the task's components of the ``data`` and ``curriculum`` kinds: for
``worlds`` the recipe, curriculum and challenger) and yet yields exactly the training rows its
parent's files yield, at the slot's cycle and seed, changes nothing the policy learns from.

Training it anyway would retrain the incumbent with a new seed, and a gain from that seed
would be promoted as a data change. So :class:`InertCheck` builds the parent's corpus once per
slot and compares each proposal's with it; the training round asks again (up to
:data:`ATTEMPTS` proposals, the earlier ones named to the proposer as failures) and records
the slot as failed, with every inert proposal logged, when none changes the corpus. A corpus
that cannot be built, or that is empty, is never called inert: the training reports why.

Rows are compared in order only where the training reads them in order. A trainer that draws
its rows in a seeded random order (TRL's SFT and GRPO by default) trains a reordered corpus as
the same corpus drawn with another seed, so there the rows are compared as a multiset: a
proposal that only reorders (or, for a curriculum, re-lists) the parent's rows is inert too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ATTEMPTS = 4  # proposals a training slot asks for before it gives up on an inert one
LOG_STREAM = "inert"
REFUSED = "inert: every proposal"

#: one side's corpus as ``coevolution.build_corpus`` returns it: (rows, verdict, error)
Built = tuple[list[dict[str, Any]] | None, dict[str, Any], str | None]


def training_content(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """What a training job reads of ``rows``: each row's fields without its provenance, in
    order (provenance names the files that made the row, so it always differs)."""
    return [tuple(f"{k}={row[k]}" for k in sorted(row) if k != "provenance") for row in rows]


def compared(content: list[tuple[str, ...]], ordered: bool) -> list[tuple[str, ...]]:
    """``content`` as the training sees it: in order, or as a multiset (sorted, each row as
    often as it occurs: a repeated row is drawn more often) when the training shuffles."""
    return content if ordered else sorted(content)


def corpus_only(edits: Mapping[str, str], paths: Sequence[str]) -> bool:
    """Whether ``edits`` change only files in ``paths`` (the corpus components' files)."""
    return bool(edits) and set(edits) <= set(paths)


@dataclass
class InertCheck:
    """One training slot's comparison with its parent: ``build(files)`` builds a corpus at
    the slot's cycle and seed (the parent's is built on first use and kept), ``parent`` the
    parent's files, ``paths`` the corpus components' files. ``routed(rows, files)``: the rows
    a training under ``files`` keeps (routing by harness). ``ordered``: whether the training
    reads its rows in order (``JobSpec.reads_in_order``); when not, rows compare as a
    multiset."""

    build: Callable[[Mapping[str, str]], Built]
    routed: Callable[[list[dict[str, Any]], Mapping[str, str]], list[dict[str, Any]]]
    parent: Mapping[str, str]
    paths: Sequence[str]
    ordered: bool = True
    _parent: list[tuple[str, ...]] | None = None
    _parent_built: bool = False
    _seen: dict[tuple[tuple[str, str], ...], bool] = field(default_factory=dict)

    def check(self, edits: Mapping[str, str]) -> tuple[bool, Built | None]:
        """(inert, the candidate's corpus when it was built). A proposal that edits anything
        beyond the corpus components is never inert and builds nothing here; one asked
        before gets its earlier answer without a build."""
        key = tuple(sorted(edits.items()))
        if not corpus_only(edits, self.paths):
            return False, None
        if key in self._seen:
            return self._seen[key], None
        files = {**self.parent, **edits}
        built = self.build(files)
        theirs = self._content(built, files)
        self._seen[key] = theirs is not None and theirs == self._parent_content()
        return self._seen[key], built

    def _parent_content(self) -> list[tuple[str, ...]] | None:
        if not self._parent_built:
            self._parent = self._content(self.build(self.parent), self.parent)
            self._parent_built = True
        return self._parent

    def _content(self, built: Built, files: Mapping[str, str]) -> list[tuple[str, ...]] | None:
        rows, _, error = built
        if not rows or error is not None:
            return None
        try:
            return compared(training_content(self.routed(rows, files)), self.ordered) or None
        except ValueError:  # a routing error: the training will report it
            return None


def refusal(tried: int) -> str:
    """The failed slot's error when all ``tried`` proposals were inert."""
    return (f"{REFUSED} ({tried}) yields the parent's training corpus at this cycle and seed, "
            f"so training it would only retrain the incumbent with a new seed: not trained "
            f"(see the node's '{LOG_STREAM}' log)")


__all__ = ["ATTEMPTS", "Built", "InertCheck", "LOG_STREAM", "REFUSED", "compared",
           "corpus_only", "refusal", "training_content"]
