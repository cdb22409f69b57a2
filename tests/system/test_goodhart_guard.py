"""The campaign-level Goodhart guard: a dev split that can be gamed. Each proposal raises the
dev score and leaves held-out where it was; every step passes both promotion gates, and the
guard must flag the campaign (and stop it when asked)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from recursor.api import program_campaign
from recursor.archive import Archive, Node
from recursor.config import GoodhartConfig, parse_config
from recursor.orchestrator.goodhart import decoupling
from recursor.orchestrator.graph import run_campaign
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.tasks import Objective
from recursor.tasks.cfr import CFRTask
from recursor.types import ChangeKind

pytestmark = pytest.mark.timeout(600)
PROGRAM = "# EVOLVE-BLOCK-START\nDEV_TRICK = 0\n# EVOLVE-BLOCK-END\n"
# Reads the constant without running the candidate: dev rewards the trick, held-out ignores it.
EVALUATOR = '''import ast


def evaluate(path, split):
    tree = ast.parse(open(path).read())
    trick = next(n.value.value for n in tree.body if isinstance(n, ast.Assign))
    return {"score": float(trick) if split == "dev" else 1.0}
'''


class GamingProposer(Proposer):
    """Raises the dev-only trick by one each time."""

    name = "gaming"

    def propose(self, context: ProposalContext) -> Proposal:
        path = context.editable_paths[0]
        source = context.parent.files[path]
        trick = int(re.search(r"DEV_TRICK = (\d+)", source).group(1))  # type: ignore[union-attr]
        return Proposal(ChangeKind.ALGORITHM, f"trick {trick + 1}",
                        {path: source.replace(f"DEV_TRICK = {trick}", f"DEV_TRICK = {trick + 1}")})


def _campaign(tmp_path: Path, action: str) -> tuple[Path, object]:
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    base = parse_config({"selection": {"kind": "greedy"}, "concurrency": 1,
                         "promotion": {"goodhart": {"window": 2, "action": action}}})
    config = program_campaign(tmp_path / "initial.py", tmp_path / "evaluate.py", max_evals=5,
                              base=base)
    directory = tmp_path / "c"
    return directory, run_campaign(config, directory, proposers=[GamingProposer()])


def _promoted(directory: Path) -> tuple[Archive, list[str]]:
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    ids = list(dict.fromkeys(r.node_id for r in archive.promotions(manifest["campaign_id"])))
    return archive, ids


def test_a_gameable_dev_split_is_flagged(tmp_path: Path) -> None:
    directory, summary = _campaign(tmp_path, "flag")
    archive, promoted = _promoted(directory)
    assert len(promoted) == 6  # the start and every proposal: each passed both gates
    flagged = [p for p in promoted if any(log.stream == "goodhart" for log in archive.logs(p))]
    assert flagged == promoted[2:]  # from the second promotion on, once each
    found = json.loads(next(log.content for log in archive.logs(promoted[2])
                            if log.stream == "goodhart"))
    assert found["dev_gain"] == 2.0 and found["heldout_gain"] == 0.0
    assert summary.warnings and "dev stopped tracking held-out" in summary.warnings[0]
    assert "evaluation budget reached" in summary.stop_reason


def test_the_guard_can_stop_the_campaign(tmp_path: Path) -> None:
    directory, summary = _campaign(tmp_path, "stop")
    _, promoted = _promoted(directory)
    assert len(promoted) == 3 and summary.stop_reason.startswith("Goodhart guard: ")


def test_decoupling_needs_dev_gain_without_heldout_gain() -> None:
    maximize = Objective("score", "maximize")
    config = GoodhartConfig(window=2)

    def path(*points: tuple[float, float]) -> list[Node]:
        return [Node(id=f"n{i}", campaign_id="c", round=i, slot=0, kind=ChangeKind.ALGORITHM,
                     proposer="p", score=d, heldout_score=h) for i, (d, h) in enumerate(points)]

    assert decoupling(path((0, 1), (1, 1)), maximize, config) is None  # one promotion only
    assert decoupling(path((0, 1), (1, 1), (2, 0.9)), maximize, config) is not None
    assert decoupling(path((0, 1), (1, 1.1), (2, 1.2)), maximize, config) is None  # tracks
    assert decoupling(path((0, 1), (1, 1.1), (2, 1.1), (3, 1.1)), maximize, config) is not None


def test_a_solved_heldout_split_is_not_read_as_decoupled() -> None:
    """Held-out at the objective's best (cfr: every held-out game below the score's floor)
    cannot follow dev any further: flat there is not a decoupling; flat above it still is."""
    floor = CFRTask().objective.best
    assert floor is not None
    cfr = CFRTask().objective
    config = GoodhartConfig(window=2)

    def path(*points: tuple[float, float]) -> list[Node]:
        return [Node(id=f"n{i}", campaign_id="c", round=i, slot=0, kind=ChangeKind.ALGORITHM,
                     proposer="p", score=d, heldout_score=h) for i, (d, h) in enumerate(points)]

    assert decoupling(path((-1.5, -1.8), (-2.0, floor), (-2.1, floor), (-2.3, floor)),
                      cfr, config) is None
    assert decoupling(path((-1.5, -1.8), (-2.0, -2.2), (-2.1, -2.2), (-2.3, -2.2)),
                      cfr, config) is not None
    worse = floor + 0.05  # fell off the floor: a real regression, flagged
    assert decoupling(path((-1.5, -1.8), (-2.0, floor), (-2.1, floor), (-2.3, worse)),
                      cfr, config) is not None


def test_each_flag_is_shown_once_in_the_summary_with_what_to_do(tmp_path: Path) -> None:
    """The live line is short and names the flagged node; the summary shows each flag's
    window once, held-out's change over the campaign and what to do."""
    import io

    from rich.console import Console

    from recursor.orchestrator.progress import NullReporter
    from recursor.orchestrator.summary import render_summary

    live: list[str] = []

    class Messages(NullReporter):
        def message(self, text: str) -> None:
            live.append(text)

    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    base = parse_config({"selection": {"kind": "greedy"}, "concurrency": 1,
                         "promotion": {"goodhart": {"window": 2}}})
    config = program_campaign(tmp_path / "initial.py", tmp_path / "evaluate.py", max_evals=4,
                              base=base)
    summary = run_campaign(config, tmp_path / "c", Messages(), proposers=[GamingProposer()])
    flagged = [m for m in live if m.startswith("Goodhart guard: flagged")]
    assert len(flagged) == 3 and all(len(m) < 120 for m in flagged)
    assert not any("dev stopped tracking" in m for m in live)  # the long story: summary only
    out = io.StringIO()
    render_summary(summary, "score", Console(file=out, width=200))
    text = out.getvalue()
    assert text.count("Goodhart guard, 3 flags") == 1
    windows = [f"{f['first']} -> {f['last']} (2 promotions): dev +2, held-out +0"
               for f in summary.flags]
    assert len(windows) == 3 and all(text.count(w) == 1 for w in windows)
    assert summary.heldout_change == 0.0
    assert "Held-out did not improve over the whole campaign" in text
