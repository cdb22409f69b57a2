"""`recursor archive export --format sft`: an archive's evaluated changes as prompt/completion
rows for a proposer model, with dev gains only (held-out and test never exported) and the
filters (improving only, top-k per parent, deduplicated)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recursor.archive import ArchiveReader
from recursor.cli import app
from recursor.orchestrator.proposer_data import SftFilter, SftRow, select, sft_rows
from recursor.proposers import END, apply_response
from recursor.types import Objective
from tests.helpers import ui_archive

MINIMIZE = Objective(metric="score", direction="minimize")


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    return ui_archive.build(tmp_path / "c")


def _rows(directory: Path) -> tuple[list[SftRow], dict[str, int]]:
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = ArchiveReader.open(manifest["archive_url"])
    try:
        return sft_rows(archive, manifest["campaign_id"], MINIMIZE, SftFilter())
    finally:
        archive.close()


def test_each_scored_change_is_a_row_with_its_dev_gain(campaign: Path) -> None:
    rows, skipped = _rows(campaign)
    by_node = {r.node: r for r in rows}
    assert set(by_node) == {ui_archive.GOOD, ui_archive.GRANDCHILD}
    assert by_node[ui_archive.GOOD].gain == pytest.approx(1.0 - 0.5)  # dev, minimized
    assert by_node[ui_archive.GRANDCHILD].gain == pytest.approx(0.5 - 0.6)
    assert skipped == {"no parent (a starting point)": 1,
                       "not scored (failed, invalid or unfinished)": 1}
    good = by_node[ui_archive.GOOD]
    assert good.prompt.startswith("# objective: score (minimize)\n# parent dev score: 1\n")
    # the outcome conditions the model: it asks for "improved" when it proposes
    assert good.prompt.endswith("# outcome: improved\n# edit:\n")
    assert by_node[ui_archive.GRANDCHILD].prompt.endswith("# outcome: not improved\n# edit:\n")
    assert good.completion.endswith(f"{END}\n")
    edit = good.completion.removesuffix(f"{END}\n")
    old = {"algo.py": "def weight(t):\n    return 1.0\n"}
    assert apply_response(edit, old, ["algo.py"]).files["algo.py"] == \
        "def weight(t):\n    return float(t)  # linear averaging\n"


def test_held_out_and_test_scores_never_enter_a_row(campaign: Path) -> None:
    text = json.dumps([r.to_json() for r in _rows(campaign)[0]])
    # the synthetic archive's held-out scores are 1.2 (start) and 0.7 (GOOD)
    assert "1.2" not in text and "0.7" not in text
    assert "heldout" not in text.lower() and "held-out" not in text.lower()
    assert "test" not in text.lower()


def _row(node: str, parent: str, gain: float, completion: str = "c") -> SftRow:
    return SftRow("p", completion, gain, node, parent, "mutation", "cid")


def test_filters_keep_improving_changes_the_best_per_parent_and_no_repeats() -> None:
    rows = [_row("a", "r", 0.3, "x"), _row("b", "r", -0.1, "y"), _row("c", "r", 0.5, "z"),
            _row("d", "q", 0.2, "x"), _row("e", "r", 0.1, "x"), _row("f", "q", 0.0, "w")]
    assert [r.node for r in select(rows, SftFilter(improving_only=True))] == ["a", "c"]
    # "d" and "e" repeat "a"'s (prompt, completion): the repeat with the best gain stays
    assert [r.node for r in select(rows, SftFilter())] == ["a", "b", "c", "f"]
    assert [r.node for r in select(rows, SftFilter(dedupe=False, top_k=1))] == ["c", "d"]
    assert [r.node for r in select(rows, SftFilter(improving_only=True, min_gain=0.4))] == ["c"]


def test_the_cli_writes_jsonl_and_says_what_it_left_out(campaign: Path) -> None:
    result = CliRunner().invoke(app, ["archive", "export", "--format", "sft", "--improving",
                                      "--dir", str(campaign)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [row["node"] for row in lines] == [ui_archive.GOOD]
    assert set(lines[0]) == {"prompt", "completion", "gain", "node", "parent", "proposer",
                             "campaign"}
    assert "1 rows; left out: 1 filtered out" in result.output
    wrong = CliRunner().invoke(app, ["archive", "export", "--top-k", "2", "--dir",
                                     str(campaign)])
    assert wrong.exit_code != 0


def test_each_proposers_share_and_valid_improving_and_duplicate_rates(campaign: Path) -> None:
    from recursor.orchestrator.proposer_stats import proposer_stats

    manifest = json.loads((campaign / "campaign.json").read_text())
    archive = ArchiveReader.open(manifest["archive_url"])
    try:
        stats = {s.name: s for s in proposer_stats(archive.nodes(manifest["campaign_id"]),
                                                   MINIMIZE)}
    finally:
        archive.close()
    assert set(stats) == {"llm", "mutation"}  # the start is no proposer's
    llm, mutation = stats["llm"], stats["mutation"]
    assert (llm.proposals, llm.valid, llm.improving, llm.duplicates) == (1, 1, 1, 0)
    assert (mutation.proposals, mutation.improving) == (2, 0)  # a crash, and a worse square
    assert llm.share == pytest.approx(1 / 3)
    assert llm.describe() == "llm 33% (valid 100%, improving 100%)"


def test_operator_rows_come_from_recorded_mutations_and_replay_on_the_parent(
        tmp_path: Path) -> None:
    """``--language ops``: each mutation the campaign evaluated is a row whose prompt numbers
    the parent's region lines and whose completion the operator parser reads and the engine
    runs on that parent; changes with no operator form (Optuna's) are left out and counted."""
    import random

    from recursor.config import parse_config
    from recursor.orchestrator.graph import run_campaign
    from recursor.orchestrator.progress import NullReporter
    from recursor.proposers.learned import apply_ops, parse_ops
    from recursor.proposers.mutation import generic_primitives
    from recursor.tasks.cfr import CFRTask

    config = parse_config({"budget": {"max_evals": 12}, "seed": 5,
                           "proposers": [{"kind": "mutation"}, {"kind": "optuna"}],
                           "proposer_choice": {"kind": "alternate"}})
    run_campaign(config, tmp_path / "c", NullReporter())
    result = CliRunner().invoke(app, ["archive", "export", "--format", "sft", "--language",
                                      "ops", "--failed-runs", "--dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert rows and {r["proposer"] for r in rows} == {"mutation"}
    assert "no operator form" in result.output
    failed = [r for r in rows if r["gain"] is None]  # --failed-runs: what not to propose
    assert all(r["prompt"].endswith("# outcome: not improved\n# edit:\n") for r in failed)
    task = CFRTask()
    primitives = [*generic_primitives(), *task.mutation_primitives()]
    manifest = json.loads((tmp_path / "c" / "campaign.json").read_text())
    archive = ArchiveReader.open(manifest["archive_url"])
    try:
        from recursor.archive import GitStore

        store = GitStore(Path(archive.campaign(manifest["campaign_id"]).repo_path))
        nodes = {n.id: n for n in archive.nodes(manifest["campaign_id"])}
        ran_and_failed = [n.id for n in nodes.values() if n.proposer == "mutation"
                          and n.status == "failed" and n.run_status is not None]
        assert sorted(r["node"] for r in failed) == sorted(ran_and_failed)
        for row in rows:
            assert row["prompt"].count("|    # EVOLVE-BLOCK-START") == 3
            ops = parse_ops(row["completion"].removesuffix(f"{END}\n"))
            parent = store.read(nodes[row["parent"]].commit or "")
            files, applied = apply_ops(parent, ops, list(parent), primitives, random.Random(0))
            assert len(applied) == len(ops) and task.static_check(files) is None
    finally:
        archive.close()
