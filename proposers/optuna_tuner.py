"""``OptunaProposer``: tune the literals of the parent's EVOLVE blocks with TPE.

The tuned literals are the numbers, the flags (``True``/``False``) and the strings that name
one of several options the program lists together (an option group, as the mutation
proposer's ``ChooseString`` reads them: ``proposers/mutation/choices.py``). The parent's
*structure* is its source with every such literal inside an EVOLVE block abstracted (a negated
literal ``-c`` counts as one literal). Every evaluated node of
``context.history`` with the same structure is a finished trial whose parameters are its
literals and whose value is its score; a seeded TPE sampler then asks for new values. The study
is rebuilt on every call, so the proposer keeps no state and the same context always gives the
same proposal.

Search ranges lie around the parent's values, widened to cover every value seen in history:
log-uniform over ``[v / 10, 10 v]`` for a positive float, ``[-10|v|, -|v| / 10]`` (uniform) for
a negative one; an int literal ``n`` stays an int in ``[n - max(2, |n|), n + max(2, |n|)]``.
Only nonzero numbers are moved (:func:`tunable_indices`); a zero stays where it is (it is
abstracted like any literal, so trials still group by structure). A flag or an option is
categorical: its choices are both flags, or its groups' options (and every value seen in
history).
"""

from __future__ import annotations

import ast
import functools
import math
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from recursor import pyast
from recursor.errors import ProposerError
from recursor.proposers._base import NodeView, Proposal, ProposalContext, Proposer
from recursor.proposers.mutation.choices import block_options
from recursor.proposers.mutation.primitives import is_number
from recursor.proposers.mutation.proposer import (
    ValidityCheck,
    context_rng,
    mutable_paths,
    proposal_kind,
)
from recursor.proposers.mutation.scope import Options
from recursor.proposers.mutation.source import Block, find_blocks, nodes_in_blocks, splice
from recursor.types import NodeStatus

optuna.logging.set_verbosity(optuna.logging.WARNING)
PLACEHOLDER = "__recursor_constant__"
LOW_FACTOR, HIGH_FACTOR = 0.1, 10.0  # a decade either way: local search
STARTUP_TRIALS = 4
MAX_TUNED = 2  # constants moved per proposal


Value = float | int | bool | str


@dataclass(frozen=True)
class NumericLiteral:
    """One tunable literal of a block: its node (the ``-c`` node when negated) and value; a
    flag or an option also has its ``choices`` (the parent's value among them)."""

    node: ast.expr
    value: Value
    choices: tuple[Value, ...] = ()


def _number(node: ast.expr) -> float | int:
    assert isinstance(node, ast.Constant) and isinstance(node.value, int | float)
    return node.value


def find_literals(source: str) -> list[NumericLiteral]:
    """The tunable literals inside the EVOLVE blocks of ``source``, in source order."""
    tree = pyast.parse(source)
    negated: set[int] = set()
    found: list[NumericLiteral] = []
    options: dict[Block, Options] = {}
    for node, block in nodes_in_blocks(tree, find_blocks(source)):
        if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
                and is_number(node.operand)):
            negated.add(id(node.operand))
            found.append(NumericLiteral(node, -_number(node.operand)))
        elif is_number(node) and id(node) not in negated:
            found.append(NumericLiteral(node, _number(node)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            found.append(NumericLiteral(node, node.value, (node.value, not node.value)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if block not in options:
                options[block] = block_options(tree, source, block)
            choice = _option(node, options[block])
            if choice is not None:
                found.append(choice)
    found = [lit for lit in found if not (isinstance(lit.node, ast.Constant)
                                           and id(lit.node) in negated)]
    return sorted(found, key=lambda lit: (lit.node.lineno, lit.node.col_offset))


def _option(node: ast.Constant, options: Options) -> NumericLiteral | None:
    """A string literal that names an option of its block's groups, with its choices."""
    value = node.value
    if not isinstance(value, str) or (node.lineno, node.col_offset) in options.fixed:
        return None
    others = options.alternatives(value)
    return NumericLiteral(node, value, (value, *others)) if others else None


def with_values(source: str, literals: Sequence[NumericLiteral],
                values: Sequence[Value]) -> str:
    """``source`` with each literal's text replaced by the matching value."""
    edits = [(lit.node, _literal_text(v)) for lit, v in zip(literals, values, strict=True)]
    return splice(source, edits)


def _literal_text(value: Value) -> str:
    text = repr(value)
    return f"({text})" if isinstance(value, int | float) and value < 0 else text


@functools.lru_cache(maxsize=1024)  # every proposal reads the structure of every history node
def structure(source: str) -> str:
    """The program with block literals abstracted (an AST dump, formatting ignored)."""
    literals = find_literals(source)
    edits = [(lit.node, PLACEHOLDER) for lit in literals]
    return ast.dump(pyast.parse(splice(source, edits)))


def _distribution(literal: NumericLiteral, seen: Sequence[Value]) -> BaseDistribution:
    """The search range of one literal (see the module docstring)."""
    parent = literal.value
    if literal.choices:
        return CategoricalDistribution(list(dict.fromkeys([*literal.choices, *seen])))
    assert isinstance(parent, int | float)
    if isinstance(parent, int):
        spread = max(2, abs(parent))
        ints = [int(round(v)) for v in seen if isinstance(v, int | float)]
        return IntDistribution(min([parent - spread, *ints]), max([parent + spread, *ints]))
    if parent > 0:
        low, high = parent * LOW_FACTOR, parent * HIGH_FACTOR
    elif parent < 0:
        low, high = parent * HIGH_FACTOR, parent * LOW_FACTOR
    else:  # a zero is never tuned (tunable_indices); its range only holds history values
        low, high = -1.0, 1.0
    numbers = [float(v) for v in seen if isinstance(v, int | float)]
    low, high = min([low, *numbers]), max([high, *numbers])
    return FloatDistribution(low, high, log=parent > 0 and low > 0)


def tunable_indices(literals: Sequence[NumericLiteral]) -> list[int]:
    """The literals optuna may move: every flag and option, and the nonzero numbers.

    A zero is usually structural (a sign test ``x > 0``, a clip bound ``max(x, 0.0)``, a
    term switched off) and has no scale to search around: moving it is a different program,
    which is the mutation proposer's job, and sampling it from a fixed interval mostly broke
    the program (the campaigns' archives showed such trials among the worst).
    """
    return [i for i, lit in enumerate(literals) if lit.choices or lit.value != 0]


def _param_name(index: int, literal: NumericLiteral) -> str:
    return f"c{index}_line{literal.node.lineno}"


def _trial_values(node: NodeView, path: str, shape: str, count: int) -> list[Value] | None:
    """A history node's literal values when it is a scored node of the same structure."""
    source = node.files.get(path)
    if node.status != NodeStatus.DONE or node.score is None or source is None:
        return None
    if not math.isfinite(node.score):
        return None
    try:
        if structure(source) != shape:
            return None
        values = [lit.value for lit in find_literals(source)]
    except SyntaxError:
        return None
    return values if len(values) == count else None


def build_study(literals: Sequence[NumericLiteral],
                history: Sequence[tuple[list[Value], float]],
                direction: str, seed: int, tuned: Collection[int]
                ) -> tuple[optuna.Study, dict[str, BaseDistribution]]:
    """A TPE study holding one finished trial per history entry (values, score).

    Only the literals whose index is in ``tuned`` are sampled; the others stay fixed at their
    value in ``literals`` (the parent's), so one proposal moves one or two constants at a time
    while the model still learns from every trial.
    """
    study_direction: Literal["minimize", "maximize"] = (
        "maximize" if direction == "maximize" else "minimize")
    distributions = {}
    for index, lit in enumerate(literals):
        seen = [values[index] for values, _ in history]
        distributions[_param_name(index, lit)] = _distribution(lit, seen)
    fixed = {name: lit.value for index, (name, lit) in enumerate(zip(distributions, literals,
                                                                      strict=True))
             if index not in tuned}
    tpe = optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP_TRIALS)
    with warnings.catch_warnings():  # PartialFixedSampler is marked experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.PartialFixedSampler(fixed, tpe)
    study = optuna.create_study(direction=study_direction, sampler=sampler)
    for values, score in history:
        params = {name: _param(d, v)
                  for (name, d), v in zip(distributions.items(), values, strict=True)}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=distributions,
                                                  value=score))
    return study, distributions


def _param(distribution: BaseDistribution, value: Value) -> Value:
    """A history value as ``distribution`` holds it."""
    if isinstance(distribution, CategoricalDistribution):
        return value
    if isinstance(distribution, IntDistribution):
        return int(round(float(value)))
    return float(value)


class OptunaProposer(Proposer):
    """Proposes new values for the parent's block literals from a history-built TPE study.

    Contract: the proposal changes only literal values of one editable file (its structure is
    the parent's), passes ``check``, and is deterministic given the context. The study's
    trials are exactly the history nodes whose file has the parent's structure (the parent
    among them when it is in history). Raises ProposerError when the parent has no literal in
    an EVOLVE block or when ``max_attempts`` asks gave nothing valid and new.
    """

    name = "optuna"
    tunes_constants = True

    def __init__(self, check: ValidityCheck, editable_paths: Sequence[str] = (),
                 max_attempts: int = 20, seed: int = 0) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.check = check
        self.editable_paths = tuple(editable_paths)
        self.max_attempts = max_attempts
        self.seed = seed

    def _target(self, context: ProposalContext) -> tuple[str, list[NumericLiteral]]:
        files = context.parent.files
        paths = mutable_paths(files, self.editable_paths or context.editable_paths)
        with_literals = [(p, find_literals(files[p])) for p in paths]
        with_literals = [(p, lits) for p, lits in with_literals if lits]
        if not with_literals:
            raise ProposerError("the parent has no constant inside an EVOLVE block of an "
                                "editable file (a number, a True/False flag, or a string "
                                "among options the program lists together); nothing for "
                                "optuna to tune")
        rng = context_rng(self.name, context, self.seed)
        return rng.choice(with_literals)

    def history_trials(self, context: ProposalContext, path: str,
                       literals: Sequence[NumericLiteral]) -> list[tuple[list[Value], float]]:
        """(values, score) of every history node with the parent's structure, deduplicated."""
        shape = structure(context.parent.files[path])
        trials: dict[tuple[Value, ...], float] = {}
        for node in context.history:
            values = _trial_values(node, path, shape, len(literals))
            if values is not None and node.score is not None:
                trials.setdefault(tuple(values), node.score)
        return [(list(v), s) for v, s in trials.items()]

    def propose(self, context: ProposalContext) -> Proposal:
        path, literals = self._target(context)
        source = context.parent.files[path]
        trials = self.history_trials(context, path, literals)
        rng = context_rng(f"{self.name}:tune", context, self.seed)
        tunable = tunable_indices(literals)
        if not tunable:
            raise ProposerError("every constant in the parent's EVOLVE blocks is a zero; "
                                "optuna tunes nonzero numbers only (a zero has no scale)")
        tuned = rng.sample(tunable, rng.randint(1, min(MAX_TUNED, len(tunable))))
        study, distributions = build_study(literals, trials, context.objective_direction,
                                           rng.randrange(2**31), tuned)
        seen = {tuple(values) for values, _ in trials}
        seen.add(tuple(lit.value for lit in literals))
        reasons: list[str] = []
        for _ in range(self.max_attempts):
            trial = study.ask(distributions)
            values = [trial.params[name] for name in distributions]
            if tuple(values) in seen:
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                reasons.append("repeated values")
                continue
            seen.add(tuple(values))
            candidate = with_values(source, literals, values)
            reason = self.check({**context.parent.files, path: candidate})
            if reason is None:
                return self._proposal(context, path, literals, values, candidate, len(trials))
            reasons.append(reason)
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        distinct = " | ".join(list(dict.fromkeys(r[:200] for r in reasons))[:5])
        raise ProposerError(f"optuna found no valid values in {self.max_attempts} asks: {distinct}")

    def _proposal(self, context: ProposalContext, path: str, literals: Sequence[NumericLiteral],
                  values: Sequence[Value], candidate: str, n_trials: int) -> Proposal:
        changes = [{"line": lit.node.lineno, "before": lit.value, "after": v}
                   for lit, v in zip(literals, values, strict=True) if v != lit.value]
        words = ", ".join(f"line {c['line']}: {c['before']!r} -> {_short(c['after'])}"
                          for c in changes)
        return Proposal(
            kind=proposal_kind(context),
            rationale=f"{path}: TPE over {len(literals)} constants "
                      f"({n_trials} history trials): {words}",
            files={path: candidate},
            metadata={"path": path, "constants": changes, "history_trials": n_trials},
        )


def _short(value: Value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)


__all__ = ["NumericLiteral", "OptunaProposer", "build_study", "find_literals", "structure",
           "with_values"]
