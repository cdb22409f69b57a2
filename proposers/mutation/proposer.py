"""``MutationProposer``: one random, valid program mutation of the parent per proposal."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence

from recursor.errors import ProposerError
from recursor.mutation import MutationPrimitive
from recursor.proposers._base import Proposal, ProposalContext, Proposer
from recursor.proposers.mutation.crossover import crossover
from recursor.proposers.mutation.engine import AppliedMutation, MutationEngine
from recursor.proposers.mutation.prior import MutationPrior
from recursor.proposers.mutation.source import find_blocks, same_program
from recursor.types import ChangeKind

# files -> None when worth evaluating, else why not. The controller passes its sandboxed check
# (recursor.orchestrator.trial.ProposalCheck); a task's static_check executes nothing.
ValidityCheck = Callable[[Mapping[str, str]], str | None]


def context_rng(name: str, context: ProposalContext, base_seed: int = 0) -> random.Random:
    """A generator seeded by the context alone: its seed, its parent and the history length.

    The same context always gives the same proposal; a new step (longer history) or another
    parent gives a different one even when the campaign passes one fixed seed. The parent
    and the history count by their files and scores, not by node ids (ids are random), so a
    rerun of a seeded campaign repeats itself.
    """
    digest = hashlib.sha256()
    for node in (context.parent, *context.history):
        for path in sorted(node.files):
            digest.update(f"{path}\0{node.files[path]}\0".encode())
        digest.update(f"{node.score}\0".encode())
    material = f"{name}:{base_seed}:{context.seed}:{digest.hexdigest()}:{len(context.history)}"
    return random.Random(material)


MAX_CROSSOVER_TRIES = 6


def proposal_kind(context: ProposalContext) -> ChangeKind:
    """The component's kind: the first allowed kind, or ALGORITHM when none is given."""
    return context.allowed_kinds[0] if context.allowed_kinds else ChangeKind.ALGORITHM


def mutable_paths(files: Mapping[str, str], editable: Sequence[str]) -> list[str]:
    """The editable paths present in ``files`` that hold at least one EVOLVE block, sorted."""
    return sorted(p for p in editable if p in files and find_blocks(files[p]))


class MutationProposer(Proposer):
    """Mutates one editable file of the parent with the given primitives.

    Contract: the proposal's single file parses, differs from the parent's and from every
    file of the same path in ``context.history``, and passes ``check`` (called with the
    parent's files, that one replaced). ``editable_paths`` limits which files may change; when
    empty, ``context.editable_paths`` decides. Raises ProposerError when no file is mutable or
    no valid mutant was found in ``max_attempts`` attempts. With a ``prior`` (learned from
    earlier campaigns, :mod:`recursor.proposers.mutation.prior`), each proposal is the first
    valid one of ``prior_candidates`` mutants drawn in the prior's weighted order (with
    ``prior_replay``, the pool's improving edits whose site the parent holds join them).
    """

    name = "mutation"

    def __init__(self, primitives: Sequence[MutationPrimitive], check: ValidityCheck,
                 max_mutations: int = 2, max_attempts: int = 50,
                 editable_paths: Sequence[str] = (), seed: int = 0,
                 crossover: float = 0.0, prior: MutationPrior | None = None,
                 prior_candidates: int = 16, prior_replay: bool = True) -> None:
        self.engine = MutationEngine(primitives, max_mutations, max_attempts)
        self.check = check
        self.editable_paths = tuple(editable_paths)
        self.seed = seed
        self.crossover = crossover
        self.prior = prior  # None: the unweighted draw, so a seeded tree stays as it was
        self.prior_candidates = prior_candidates
        self.prior_replay = prior_replay

    def propose(self, context: ProposalContext) -> Proposal:
        files = context.parent.files
        paths = mutable_paths(files, self.editable_paths or context.editable_paths)
        if not paths:
            raise ProposerError("no editable file of the parent has an EVOLVE block to mutate")
        rng = context_rng(self.name, context, self.seed)
        path = rng.choice(paths)
        seen = [n.files[path] for n in context.history if path in n.files]

        def is_valid(source: str) -> str | None:
            return self.check({**files, path: source})

        # no draw at all when crossover is off: a seeded campaign's tree stays as it was
        if self.crossover > 0 and rng.random() < self.crossover:
            crossed = self._cross(context, path, rng, is_valid, seen)
            if crossed is not None:
                return crossed
        metadata: dict[str, object] = {}
        if self.prior is None:
            result = self.engine.mutate(files[path], rng, is_valid, avoid=seen)
        else:
            prior = self.prior

            def weigh(applied: Sequence[AppliedMutation]) -> float:
                return prior.weight(path, applied)

            replays = prior.improving_edits(path) if self.prior_replay else ()
            result = self.engine.mutate_weighted(files[path], rng, is_valid, weigh,
                                                 self.prior_candidates, avoid=seen,
                                                 replays=replays)
            metadata["prior_weight"] = round(weigh(result.mutations), 6)
        return Proposal(
            kind=proposal_kind(context),
            rationale=f"{path}: {result.describe()}",
            files={path: result.source},
            metadata={"mutations": [m.as_dict() for m in result.mutations], "path": path,
                      "attempts": result.attempts, **metadata},
        )

    def _cross(self, context: ProposalContext, path: str, rng: random.Random,
               is_valid: Callable[[str], str | None], seen: Sequence[str]) -> Proposal | None:
        """A valid crossover of the parent's ``path`` with an inspiration's, or None (then
        the proposal is a mutation)."""
        mine = context.parent.files[path]
        others = [n for n in context.inspirations
                  if path in n.files and n.files[path] != mine]
        for _ in range(MAX_CROSSOVER_TRIES if others else 0):
            other = rng.choice(others)
            crossed = crossover(mine, other.files[path], rng)
            if crossed is None or crossed.source in seen or same_program(crossed.source, mine):
                continue
            if is_valid(crossed.source) is None:
                return Proposal(kind=proposal_kind(context),
                                rationale=f"{path}: {crossed.describe()}",
                                files={path: crossed.source},
                                metadata={"crossover": {"other": other.id,
                                                        "taken": list(crossed.taken)},
                                          "path": path})
        return None
