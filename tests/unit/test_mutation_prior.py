"""The mutation prior: its table (smoothing, weights), the weighted draw in the mutation engine,
and the pool reader's accounting of outcomes (docs/search.md, "A mutation prior from earlier
campaigns")."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from recursor.archive import Node
from recursor.config import (
    MutationPriorConfig,
    MutationProposerConfig,
    load_campaign_file,
    parse_config,
)
from recursor.errors import ConfigError
from recursor.orchestrator.mutation_prior import node_outcomes, pool_directories
from recursor.proposers.mutation.engine import MutationEngine
from recursor.proposers.mutation.primitives import generic_primitives
from recursor.proposers.mutation.prior import MAX_WEIGHT, EditOutcome, MutationPrior
from recursor.proposers.mutation.proposer import MutationProposer
from recursor.proposers.registry import build_proposer
from recursor.tasks.cfr import CFRTask
from recursor.types import NodeStatus, Objective

SOURCE = """\
# EVOLVE-BLOCK-START
A = 1.0
B = 2.0
C = 3.0
# EVOLVE-BLOCK-END
"""


def _edit(after: str, improved: bool, line: int = 2, before: str = "1.0",
          primitive: str = "ReplaceConstant") -> EditOutcome:
    return EditOutcome(primitive, "f.py", line, before, after, improved)


def _applied(after: str, line: int = 2, before: str = "1.0",
             primitive: str = "ReplaceConstant") -> Any:
    return SimpleNamespace(primitive=primitive, line=line, before=before, after=after)


def test_an_edit_that_improved_more_often_weighs_more() -> None:
    prior = MutationPrior.learn([_edit("0.0", True)] * 6 + [_edit("0.0", False)]
                                + [_edit("5.0", False)] * 6 + [_edit("7.0", True)])
    good, bad = prior.weight("f.py", [_applied("0.0")]), prior.weight("f.py", [_applied("5.0")])
    assert good > 1.0 > bad
    # an edit never seen takes its site's rate: between the two, since the site mixes them
    unseen = prior.weight("f.py", [_applied("9.0")])
    assert bad < unseen < good
    # another site of the same primitive, never seen: the primitive's rate
    elsewhere = prior.weight("f.py", [_applied("0.0", line=3, before="2.0")])
    assert elsewhere == pytest.approx(prior.weight("f.py", [_applied("x", line=4, before="z")]))


def test_weights_multiply_over_edits_and_follow_the_strength() -> None:
    outcomes = [_edit("0.0", True)] * 4 + [_edit("5.0", False)] * 12
    prior = MutationPrior.learn(outcomes)
    one = prior.weight("f.py", [_applied("0.0")])
    assert prior.weight("f.py", [_applied("0.0"), _applied("0.0")]) == pytest.approx(one ** 2)
    assert MutationPrior.learn(outcomes, strength=2.0).weight(
        "f.py", [_applied("0.0")]) == pytest.approx(one ** 2)
    assert MutationPrior.learn(outcomes, strength=0.0).weight("f.py", [_applied("0.0")]) == 1.0
    many = [_applied("0.0")] * 40
    assert prior.weight("f.py", many) == MAX_WEIGHT  # clipped


def test_an_empty_table_has_no_preference() -> None:
    assert MutationPrior().weight("f.py", [_applied("0.0")]) == 1.0
    assert "0 edits" in MutationPrior().summary()


@pytest.mark.parametrize("entry", [{}, {"primitive": "X", "line": "not a line", "before": "a",
                                        "after": "b"}, {"primitive": "X", "line": 1}])
def test_a_malformed_record_is_not_counted(entry: dict[str, Any]) -> None:
    assert EditOutcome.from_metadata("f.py", entry, True) is None


def test_the_weighted_draw_favours_what_the_prior_favours_and_stays_valid() -> None:
    engine = MutationEngine(generic_primitives(), max_mutations=1)

    def valid(source: str) -> str | None:
        return None

    def favour_zero(applied: Any) -> float:
        return 50.0 if applied and applied[0].after == "0.0" else 1.0

    plain, weighted = Counter(), Counter()
    for seed in range(200):
        plain[engine.mutate(SOURCE, random.Random(seed), valid).mutations[0].after == "0.0"] += 1
        result = engine.mutate_weighted(SOURCE, random.Random(seed), valid, favour_zero, 16)
        weighted[result.mutations[0].after == "0.0"] += 1
        assert result.source != SOURCE
    assert weighted[True] > 3 * max(1, plain[True])
    again = engine.mutate_weighted(SOURCE, random.Random(7), valid, favour_zero, 16)
    assert again == engine.mutate_weighted(SOURCE, random.Random(7), valid, favour_zero, 16)


def test_the_weighted_draw_skips_invalid_and_avoided_mutants() -> None:
    engine = MutationEngine(generic_primitives(), max_mutations=1)
    first = engine.mutate_weighted(SOURCE, random.Random(3), lambda s: None, lambda a: 1.0, 8)
    refused = {first.source}
    result = engine.mutate_weighted(SOURCE, random.Random(3), lambda s: "no" if "0.0" in s
                                    else None, lambda a: 1.0, 8, avoid=refused)
    assert result.source not in refused and "0.0" not in result.source


def test_a_replayed_edit_is_offered_where_the_parent_holds_its_site() -> None:
    """An edit that improved in the pool (a value no primitive draws here) joins the drawn
    mutants where its site exists, and the weighted draw takes it at times; nowhere else."""
    prior = MutationPrior.learn([EditOutcome("PerturbConstant", "f.py", 3, "2.0", "7.25",
                                             True)] + [EditOutcome("PerturbConstant", "f.py", 2,
                                                                   "1.0", "0.5", False)] * 8,
                                strength=2.0)
    replays = prior.improving_edits("f.py")
    assert replays == [("PerturbConstant", 3, "2.0", "7.25")] and not prior.improving_edits("g")
    engine = MutationEngine(generic_primitives(), max_mutations=1)

    def weigh(applied: Any) -> float:
        return prior.weight("f.py", applied)

    taken = [engine.mutate_weighted(SOURCE, random.Random(seed), lambda s: None, weigh, 16,
                                    replays=replays).source for seed in range(20)]
    # weighed as the draws are: other edits of the same improving site share its rate
    assert sum("B = 7.25" in t for t in taken) >= 3
    moved = SOURCE.replace("B = 2.0", "B = 2.5")  # the site's text differs: nothing replayed
    assert not any("7.25" in engine.mutate_weighted(moved, random.Random(seed), lambda s: None,
                                                    weigh, 16, replays=replays).source
                   for seed in range(20))
    unweighted = [engine.mutate_weighted(SOURCE, random.Random(seed), lambda s: None, weigh,
                                         16).source for seed in range(20)]
    assert not any("7.25" in t for t in unweighted)


def _node(node_id: str, parent: str | None, score: float | None, status: NodeStatus,
          mutations: Any = None, round_: int = 1, duplicate_of: str | None = None) -> Node:
    metadata = {} if mutations is None else {"mutations": mutations, "path": "f.py"}
    return Node(id=node_id, campaign_id="c", parent_id=parent, round=round_, slot=0,
                kind="algorithm", proposer="mutation", status=status, score=score,
                proposal={"metadata": metadata}, duplicate_of=duplicate_of)


def test_the_pool_reader_counts_outcomes_by_the_objective() -> None:
    edit = [{"primitive": "ReplaceConstant", "line": 2, "before": "1.0", "after": "0.0"}]
    nodes = [_node("root", None, 1.0, NodeStatus.DONE, round_=0),
             _node("better", "root", 0.5, NodeStatus.DONE, edit),
             _node("worse", "root", 2.0, NodeStatus.DONE, edit),
             _node("crashed", "root", None, NodeStatus.FAILED, edit),
             _node("twin", "root", 0.5, NodeStatus.DONE, edit, duplicate_of="better"),
             _node("running", "root", None, NodeStatus.RUNNING, edit),
             _node("optuna", "root", 0.1, NodeStatus.DONE)]
    minimized = [o.improved for o in node_outcomes(nodes, Objective("score", "minimize"))]
    assert minimized == [True, False, False]
    maximized = [o.improved for o in node_outcomes(nodes, Objective("score", "maximize"))]
    assert maximized == [False, True, False]


def test_a_pool_entry_is_a_campaign_or_a_folder_of_them(tmp_path: Path) -> None:
    for name in ("b", "a"):
        (tmp_path / "sweep" / name).mkdir(parents=True)
        (tmp_path / "sweep" / name / "campaign.json").write_text("{}")
    assert pool_directories([str(tmp_path / "sweep")]) == [tmp_path / "sweep" / "a",
                                                            tmp_path / "sweep" / "b"]
    assert pool_directories([str(tmp_path / "sweep" / "b")]) == [tmp_path / "sweep" / "b"]
    with pytest.raises(ConfigError, match="neither a campaign directory"):
        pool_directories([str(tmp_path / "nowhere")])


def test_the_config_needs_a_pool_and_the_proposer_needs_the_table() -> None:
    with pytest.raises(ValidationError):
        MutationPriorConfig(pool=[])
    config = parse_config({"name": "p", "task": {"kind": "cfr"}, "proposers": [
        {"kind": "mutation", "prior": {"pool": ["runs"], "strength": 2}}]})
    proposer_config = config.proposers[0]
    assert isinstance(proposer_config, MutationProposerConfig)
    assert proposer_config.prior is not None and proposer_config.prior.candidates == 16
    with pytest.raises(ConfigError, match="needs its pool read first"):
        build_proposer(proposer_config, CFRTask(), 0)
    built = build_proposer(proposer_config, CFRTask(), 0, prior=MutationPrior())
    assert getattr(built, "prior", None) is not None
    assert isinstance(built, MutationProposer) and built.prior_replay is True
    off = parse_config({"name": "p", "task": {"kind": "cfr"}, "proposers": [
        {"kind": "mutation", "prior": {"pool": ["runs"], "replay": False}}]}).proposers[0]
    unreplayed = build_proposer(off, CFRTask(), 0, prior=MutationPrior())
    assert isinstance(unreplayed, MutationProposer) and unreplayed.prior_replay is False


def test_a_relative_pool_in_a_campaign_file_is_read_from_the_file_s_folder(
        tmp_path: Path) -> None:
    folder = tmp_path / "campaigns"
    folder.mkdir()
    (folder / "c.yaml").write_text("name: p\ntask: {kind: cfr}\nproposers:\n"
                                   "  - {kind: mutation, prior: {pool: [../runs, ~/elsewhere]}}\n")
    config = load_campaign_file(folder / "c.yaml")[0]
    proposer = config.proposers[0]
    assert isinstance(proposer, MutationProposerConfig) and proposer.prior is not None
    assert proposer.prior.pool == [str(tmp_path / "runs"),
                                   str(Path("~/elsewhere").expanduser().resolve())]
