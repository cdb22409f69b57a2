"""Population strategies' contract (``archive/population.py``): islands keep their
sub-populations apart and migrate the best at the stated steps; a MAP-Elites grid draws only
cell elites; both are pure functions of their inputs and the rng, and return ``k`` ids of the
members."""

from __future__ import annotations

import random

import pytest

from recursor.archive import IslandSelection, MapElitesSelection, Member, build_selection
from recursor.archive.pareto import (
    Goal,
    InstanceParetoSelection,
    ParetoSelection,
    dominates,
    front,
    goals_of,
    instance_winners,
)
from recursor.archive.population import Descriptor, place
from recursor.archive.selection import GreedySelection, TournamentSelection
from recursor.config import parse_config
from recursor.errors import ConfigError
from recursor.types import Objective

MAX = Objective("score", "maximize")


def _members(count: int, per_round: int = 4) -> list[Member]:
    """A start and ``count`` nodes, ``per_round`` per round; node i scores i."""
    out = [Member("c-000-0", 0.0, 0, 0)]
    for i in range(count):
        round_, slot = 1 + i // per_round, i % per_round
        out.append(Member(f"c-{round_:03d}-{slot}", float(i + 1), round_, slot))
    return out


def test_a_node_lives_on_the_island_its_place_names() -> None:
    islands = IslandSelection(4, 100, 1, "ring", GreedySelection())
    members = _members(8)
    assert islands.island(members[0]) is None  # the start belongs to every island
    assert [islands.island(m) for m in members[1:]] == [1, 2, 3, 0, 2, 3, 0, 1]
    assert place("abc123-017-3") == (17, 3) and place("odd") == (0, 0)


def test_each_slot_breeds_its_own_island_without_migration() -> None:
    islands = IslandSelection(4, 100, 1, "ring", GreedySelection())
    members = _members(8)
    chosen = islands.choose_members(members, MAX, random.Random(0), 4, 3)
    # slot j of step 3 breeds island (3 + j) % 4, greedy takes its best member
    best = {islands.island(m): m.id for m in sorted(members[1:], key=lambda m: m.score)}
    assert chosen == [best[3], best[0], best[1], best[2]]
    for island in range(4):
        pool = islands.pool(members, MAX, island, 3)
        assert {islands.island(m) for m in pool} <= {None, island}


def test_migration_brings_the_neighbours_best_at_each_interval() -> None:
    islands = IslandSelection(4, 3, 1, "ring", GreedySelection())
    members = _members(12)  # rounds 1-3
    before = islands.pool(members, MAX, 1, 2)
    assert {islands.island(m) for m in before} == {None, 1}
    after = islands.pool(members, MAX, 1, 3)  # step 3: a migration boundary
    migrants = [m for m in after if islands.island(m) not in (None, 1)]
    island_0 = [m for m in members if islands.island(m) == 0 and m.round < 3]
    assert migrants == [max(island_0, key=lambda m: m.score)]
    every = IslandSelection(4, 3, 2, "all", GreedySelection()).pool(members, MAX, 1, 7)
    assert len([m for m in every if islands.island(m) not in (None, 1)]) == 6


def _plateau() -> list[Member]:
    """Island 1 (of 4) found 5.0 first, then only 1.0 and 2.0; island 0 keeps improving."""
    return [Member("c-000-0", 0.0, 0, 0),
            Member("c-001-0", 5.0, 1, 0), Member("c-001-3", 3.0, 1, 3),  # islands 1, 0
            Member("c-002-3", 1.0, 2, 3), Member("c-002-2", 4.0, 2, 2),  # islands 1, 0
            Member("c-003-2", 2.0, 3, 2), Member("c-003-1", 6.0, 3, 1)]  # islands 1, 0


def test_a_stalled_island_receives_migrants_at_once_and_an_improving_one_does_not() -> None:
    """Self-tuned migration (``patience``): island 1's last two children bettered nothing it
    had, so at step 4 (no migration step: interval 100) its pool holds island 0's best now;
    island 2, whose source island 1 has stalled, and island 1 with a patience of 3 (its
    first child counts as improving on the start) stay apart; without patience, nothing."""
    members = _plateau()
    adaptive = IslandSelection(4, 100, 1, "ring", GreedySelection(), patience=2)
    pool = adaptive.pool(members, MAX, 1, 4)
    assert [m.id for m in pool if adaptive.island(m) not in (None, 1)] == ["c-003-1"]
    # step 5, slot 0 breeds island 1: greedy takes the migrant, better than its own 5.0
    assert adaptive.choose_members(members, MAX, random.Random(0), 1, 5) == ["c-003-1"]
    improving = [m for m in members if adaptive.island(m) in (None, 0)]
    assert not adaptive.stalled(improving, MAX, 4)
    patient = IslandSelection(4, 100, 1, "ring", GreedySelection(), patience=3)
    assert {patient.island(m) for m in patient.pool(members, MAX, 1, 4)} == {None, 1}
    fixed = IslandSelection(4, 100, 1, "ring", GreedySelection())
    assert {fixed.island(m) for m in fixed.pool(members, MAX, 1, 4)} == {None, 1}
    # only children made before the step count: at step 3 island 1 had one child since 5.0
    assert {adaptive.island(m) for m in adaptive.pool(members, MAX, 1, 3)} == {None, 1}
    # minimized, the start's 0.0 is what no child of island 1 bettered: stalled too, while
    # children that keep going down are not
    low = Objective("score", "minimize")
    assert adaptive.stalled([m for m in members if adaptive.island(m) in (None, 1)], low, 4)
    falling = [Member("c-000-0", 9.0, 0, 0), Member("c-001-1", 8.0, 1, 1),
               Member("c-002-0", 7.0, 2, 0), Member("c-003-3", 6.0, 3, 3)]  # all island 2
    assert not adaptive.stalled(falling, low, 4) and adaptive.stalled(falling, MAX, 4)


def test_island_choices_are_pure_and_take_k_known_ids() -> None:
    islands = IslandSelection(3, 2, 1, "ring", TournamentSelection(2))
    members = _members(20, per_round=3)
    ids = {m.id for m in members}
    for step in range(1, 12):
        first = islands.choose_members(members, MAX, random.Random(step), 5, step)
        again = islands.choose_members(members, MAX, random.Random(step), 5, step)
        assert first == again and len(first) == 5 and set(first) <= ids


def test_a_grid_draws_only_cell_elites() -> None:
    grid = MapElitesSelection([Descriptor("a", 2, 0.0, 1.0), Descriptor("b", 2, 0.0, 1.0)])
    members = [Member("s", 1.0, metrics={"a": 0.1, "b": 0.1}),
               Member("x", 5.0, metrics={"a": 0.2, "b": 0.2}),      # same cell as s, better
               Member("y", 0.5, metrics={"a": 0.9, "b": 0.1}),      # a cell of its own
               Member("z", 9.0, metrics={"a": 7.0, "b": -3.0}),     # clipped into (1, 0)
               Member("w", 99.0, metrics={"a": 0.5})]               # no b: off the grid
    elites = grid.elites(members, MAX)
    assert {cell: m.id for cell, m in elites.items()} == {(0, 0): "x", (1, 0): "z"}
    drawn = set(grid.choose_members(members, MAX, random.Random(1), 200, 1))
    assert drawn == {"x", "z"}
    minimize = grid.elites(members, Objective("score", "minimize"))
    assert {cell: m.id for cell, m in minimize.items()} == {(0, 0): "s", (1, 0): "y"}
    assert grid.choose_members([Member("only", 1.0)], MAX, random.Random(0), 2, 1) == \
        ["only", "only"]


def test_the_configs_build_the_strategies_and_refuse_bad_values() -> None:
    config = parse_config({"selection": {"kind": "islands", "islands": 3, "interval": 5,
                                         "within": {"kind": "rank", "exponent": 2.0}}})
    policy = build_selection(config.selection)
    assert isinstance(policy, IslandSelection) and policy.islands == 3
    grid = parse_config({"selection": {"kind": "map_elites", "descriptors": [
        {"metric": "n8", "bins": 5, "low": 0, "high": 2}]}})
    assert isinstance(build_selection(grid.selection), MapElitesSelection)
    with pytest.raises(ConfigError, match="low < high"):
        parse_config({"selection": {"kind": "map_elites", "descriptors": [
            {"metric": "n8", "low": 2, "high": 2}]}})
    with pytest.raises(ConfigError, match="within"):
        parse_config({"selection": {"kind": "islands", "within": {"kind": "islands"}}})
    tuned = parse_config({"selection": {"kind": "islands", "patience": 4}})
    adaptive = build_selection(tuned.selection)
    assert isinstance(adaptive, IslandSelection) and adaptive.patience == 4
    with pytest.raises(ConfigError, match="patience"):
        parse_config({"selection": {"kind": "islands", "patience": 0}})


def test_log_bins_cut_orders_of_magnitude() -> None:
    axis = Descriptor("expl", 4, 1e-4, 1.0, log=True)
    assert [axis.bin(v) for v in (1e-6, 1e-4, 1e-3, 0.05, 1.0, 10.0, 0.0, -1.0)] == \
        [0, 0, 1, 2, 3, 3, 0, 0]


# --- several objectives (archive/pareto.py) ---------------------------------------------------
def test_the_front_keeps_exactly_the_undominated_nodes() -> None:
    goals = [Goal("a", "minimize"), Goal("b", "maximize")]
    metrics = {"p": {"a": 1.0, "b": 1.0}, "q": {"a": 2.0, "b": 3.0}, "r": {"a": 2.0, "b": 2.0},
               "s": {"a": 1.0, "b": 1.0}, "t": {"a": 0.5}}
    assert front(metrics, goals) == ["p", "q", "s"]  # r: dominated by q; t: lacks b
    assert dominates((1.0, -3.0), (2.0, -3.0)) and not dominates((1.0, 1.0), (1.0, 1.0))
    members = [Member(i, 0.0, metrics=m) for i, m in metrics.items()]
    drawn = ParetoSelection(goals).choose_members(members, MAX, random.Random(3), 300, 1)
    assert set(drawn) == {"p", "q", "s"}


def test_instance_pareto_weights_each_node_by_the_instances_it_is_best_on() -> None:
    lower = Objective("score", "minimize")
    members = [Member("m", 0.5, instances={"x": 1.0, "y": 1.0, "z": 5.0}),
               Member("n", 0.6, instances={"x": 2.0, "y": 2.0, "z": 0.1}),
               Member("o", 0.4, instances={"x": 1.0, "y": 3.0, "z": 3.0}),
               Member("p", 0.1, instances={"x": 9.0, "y": 9.0, "z": 9.0})]
    assert instance_winners(members, lower) == {"m": 2, "n": 1, "o": 1}
    drawn = InstanceParetoSelection().choose_members(members, lower, random.Random(0), 4000, 1)
    shares = {i: drawn.count(i) / len(drawn) for i in ("m", "n", "o")}
    assert "p" not in drawn and abs(shares["m"] - 0.5) < 0.05 and abs(shares["n"] - 0.25) < 0.05


def test_pareto_configs_build_and_need_two_metrics() -> None:
    config = parse_config({"selection": {"kind": "pareto", "metrics": [
        {"metric": "a"}, {"metric": "b", "direction": "maximize"}]}})
    policy = build_selection(config.selection)
    assert isinstance(policy, ParetoSelection) and policy.goals[1] == Goal("b", "maximize")
    assert goals_of(config.selection) == policy.goals
    assert goals_of({"kind": "pareto", "metrics": [{"metric": "a"}, {"metric": "b"}]}) == \
        [Goal("a"), Goal("b")]
    assert isinstance(build_selection(parse_config(
        {"selection": {"kind": "instance_pareto"}}).selection), InstanceParetoSelection)
    with pytest.raises(ConfigError, match="metrics"):
        parse_config({"selection": {"kind": "pareto", "metrics": [{"metric": "a"}]}})
