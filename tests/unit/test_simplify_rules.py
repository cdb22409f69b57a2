"""The simplify pass's candidate edits (orchestrator/simplify_rules.py): only inside the
evolvable regions, comments and layout kept, candidate text parsed and never run."""

from __future__ import annotations

from recursor.orchestrator.simplify_rules import apply, deletions, identities, roundings, unused

SOURCE = '''import numpy as np
LIMIT = 1 + 0  # outside the region: never touched
# EVOLVE-BLOCK-START
def scales(t, regret):
    positive_scale = t ** 1.0 / (t ** 1.0 + 0)  # a comment that stays
    negative_scale = t ** 3.0 / ((t ** 3.5 * t ** 6.508591253082838 + 5) * t ** 0.52300808)
    return np.where(regret > 0, regret * positive_scale, regret * negative_scale)
# EVOLVE-BLOCK-END
'''


def test_identities_keep_the_value_and_everything_around_them() -> None:
    edits = identities(SOURCE)
    out = apply(SOURCE, edits)
    assert "    positive_scale = t / t  # a comment that stays\n" in out
    assert "t ** 10.008591253082837 + 5" in out  # t ** 3.5 * t ** 6.5085... merged
    assert "LIMIT = 1 + 0  # outside" in out
    assert identities(out) == []  # a fixed point


def test_each_long_number_is_one_rounding() -> None:
    whats = sorted(e.what for e in roundings(SOURCE))
    assert whats == ["round 0.52300808 -> 0.52", "round 6.508591253082838 -> 6.5"]


def test_deletions_drop_terms_factors_and_cancel_a_ratio_of_equals() -> None:
    results = {e.what: apply(SOURCE, [e]) for e in deletions(SOURCE)}
    dropped = results["drop a term: regret * positive_scale -> regret"]
    assert "np.where(regret > 0, regret, regret * negative_scale)" in dropped
    assert "    positive_scale = t ** 1.0  # a comment" in \
        results["drop a term: t ** 1.0 / (t ** 1.0 + 0) -> t ** 1.0"]
    simpler = apply(SOURCE, identities(SOURCE))
    assert "    positive_scale = 1.0  #" in apply(simpler, [
        e for e in deletions(simpler) if e.what == "cancel: t / t -> 1.0"])


def test_an_assignment_nothing_reads_is_removed_whole() -> None:
    source = SOURCE.replace("regret * positive_scale", "regret")
    [edit] = unused(source)
    assert edit.what == "remove the unused positive_scale"
    out = apply(source, [edit])
    assert "positive_scale" not in out and "    negative_scale = t" in out


def test_a_file_that_does_not_parse_gets_no_edits() -> None:
    broken = SOURCE.replace("def scales", "def (")
    assert identities(broken) == roundings(broken) == deletions(broken) == unused(broken) == []


def test_a_source_too_deep_to_walk_is_left_alone() -> None:
    from recursor.orchestrator.simplify import _edits

    deep = "# EVOLVE-BLOCK-START\ndef f(t):\n    return " + " + ".join(["t"] * 50_000) + \
        "\n# EVOLVE-BLOCK-END\n"
    assert all(isinstance(_edits(rule, deep), list) for rule in
               ("identities", "roundings", "deletions", "unused"))
