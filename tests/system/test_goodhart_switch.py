"""The Goodhart guard's ``action: switch`` (docs/recursion.md, "The loop may change its
objective"): on the planted gameable-dev scenario, the campaign that switches to its recorded
alternative objective (dev plus training-side instances) must beat a dev-maximizing control
on the sealed test split, record why it switched, and keep the switch on resume.

The planted program has a dev-only trick (dev rewards it twice; held-out and test lose a
little, inside the held-out tolerance; the training-side instances lose more) and a real
quality every split rewards. Each round one proposer raises the trick and one the real
quality, from the same parent: a dev-maximizer always prefers the trick."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from recursor.api import resume
from recursor.archive import Archive
from recursor.config import parse_config
from recursor.errors import ConfigError
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.summary import CampaignSummary
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind, PolicySource

pytestmark = pytest.mark.timeout(900)
PROGRAM = "# EVOLVE-BLOCK-START\nTRICK = 0\nREAL = 0\n# EVOLVE-BLOCK-END\n"
EVALUATOR = '''import ast


def evaluate(path, split="dev"):
    values = {n.targets[0].id: n.value.value for n in ast.parse(open(path).read()).body
              if isinstance(n, ast.Assign)}
    real, trick = values["REAL"], values["TRICK"]
    score = {"dev": real + 2 * trick, "heldout": real - 0.1 * trick,
             "test": real - 0.1 * trick, "train": real - 0.5 * trick}[split]
    return {"score": float(score)}
'''


class Raise(Proposer):
    """Raises one constant of the program by one."""

    def __init__(self, constant: str) -> None:
        self.constant, self.name = constant, constant.lower()

    def propose(self, context: ProposalContext) -> Proposal:
        path = context.editable_paths[0]
        source = context.parent.files[path]
        value = int(re.search(rf"{self.constant} = (\d+)", source).group(1))  # type: ignore
        return Proposal(ChangeKind.ALGORITHM, f"{self.constant} {value + 1}",
                        {path: source.replace(f"{self.constant} = {value}",
                                              f"{self.constant} = {value + 1}")})


def _config(tmp_path: Path, action: str, max_evals: int = 12, **task: Any) -> Any:
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    return parse_config({
        "task": {"kind": "program", "program": str(tmp_path / "initial.py"),
                 "evaluator": str(tmp_path / "evaluate.py"), "splits": ["test", "train"],
                 **task},
        "selection": {"kind": "greedy"}, "proposer_choice": {"kind": "alternate"},
        "concurrency": 2, "budget": {"max_evals": max_evals},
        "promotion": {"heldout_tolerance": 0.5,
                      "goodhart": {"window": 2, "action": action}}})


def _run(tmp_path: Path, action: str) -> tuple[Path, CampaignSummary]:
    directory = tmp_path / action
    summary = run_campaign(_config(tmp_path, action), directory,
                           proposers=[Raise("TRICK"), Raise("REAL")])
    return directory, summary


def _archive(directory: Path) -> tuple[Archive, str]:
    manifest = json.loads((directory / "campaign.json").read_text())
    return Archive(manifest["archive_url"]), manifest["campaign_id"]


def test_switching_objective_beats_a_dev_maximizer_on_the_sealed_test(tmp_path: Path) -> None:
    _, control = _run(tmp_path, "flag")
    directory, switched = _run(tmp_path, "switch")
    assert control.best.test_score is not None and switched.best.test_score is not None
    assert control.best.test_score == pytest.approx(-0.6)  # six tricks, nothing real
    assert switched.best.test_score == pytest.approx(3.8)  # two tricks, then four real gains
    assert switched.best.test_score > control.best.test_score

    archive, campaign_id = _archive(directory)
    versions = archive.policies(campaign_id)
    assert [v.source for v in versions] == [PolicySource.CONFIG, PolicySource.GOODHART]
    assert versions[1].settings["objective"] == {"splits": ["dev", "train"]}
    assert "dev stopped tracking held-out" in versions[1].reason
    promoted = list(dict.fromkeys(r.node_id for r in archive.promotions(campaign_id)))
    rescored = archive.node(promoted[3])
    assert (rescored.proposer, rescored.round, rescored.parent_id) == ("rescore", 0,
                                                                       promoted[2])
    assert rescored.duplicate_of == promoted[2]  # the same files, spending no budget
    assert rescored.score == pytest.approx((4 + -1) / 2)  # dev 4, train -1: their mean
    after = [archive.node(i) for i in promoted[4:]]
    assert [n.proposer for n in after] == ["real"] * 4
    assert all(n.policy_id == versions[1].id for n in after)
    assert archive.counts(campaign_id).attempted == 12  # the re-scoring spent no evaluation

    summary = resume(directory, proposers=[Raise("TRICK"), Raise("REAL")], max_evals=14)
    versions_after = archive.policies(campaign_id)
    assert len(versions_after) == 2  # the switch is honored: no new version, no re-scoring
    assert archive.node(archive.incumbent(campaign_id) or "").proposer == "real"
    assert summary.best.test_score == pytest.approx(4.8)


def test_a_switch_whose_rescoring_fails_is_undone_and_the_campaign_goes_on(
        tmp_path: Path) -> None:
    directory = tmp_path / "c"
    config = _config(tmp_path, "switch")
    (tmp_path / "evaluate.py").write_text(EVALUATOR.replace(
        '    score = {', '    if split == "train" and trick >= 2:\n'
        '        return {"error": "no train instances for this one"}\n    score = {'))
    summary = run_campaign(config, directory, proposers=[Raise("TRICK"), Raise("REAL")])
    archive, campaign_id = _archive(directory)
    versions = archive.policies(campaign_id)
    assert [v.source for v in versions] == [PolicySource.CONFIG, PolicySource.GOODHART,
                                            PolicySource.GOODHART]
    assert "objective" not in versions[2].settings  # back to dev alone
    assert versions[2].reason.startswith("switch undone: the incumbent")
    assert summary.best.test_score == pytest.approx(-0.6)  # as the control: tried once
    assert summary.evaluated == 12


def test_a_resumed_switch_back_rescores_the_incumbent(tmp_path: Path) -> None:
    """A person's switch at resume is honored the same way: the incumbent is re-scored
    under the objective given, and selection reads only nodes scored under it."""
    directory = tmp_path / "c"
    run_campaign(_config(tmp_path, "flag", max_evals=4), directory,
                 proposers=[Raise("TRICK"), Raise("REAL")])
    archive, campaign_id = _archive(directory)
    before = archive.incumbent(campaign_id)
    resume(directory, proposers=[Raise("TRICK"), Raise("REAL")], max_evals=6,
           search_policy={"objective": {"splits": ["dev", "train"]}})
    versions = archive.policies(campaign_id)
    assert versions[-1].source == PolicySource.RESUME
    rescored = next(n for n in archive.nodes(campaign_id, 0) if n.proposer == "rescore")
    assert rescored.parent_id == before
    evidence = archive.promotions(campaign_id, node_id=rescored.id)[0].evidence
    assert evidence["objective"] == ["dev", "train"] and evidence["rescored"] == before
    # greedy without the objective's filter would pick the trick node (dev 4 against 1.5)
    assert {n.parent_id for n in archive.nodes(campaign_id, 3)} == {rescored.id}


def test_an_objective_the_task_cannot_answer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="declares no train split"):
        run_campaign(parse_config({"promotion": {"goodhart": {"action": "switch"}},
                                   "budget": {"max_evals": 1}}), tmp_path / "cfr")
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text("def evaluate(path):\n    return {'score': 1.0}\n")
    with pytest.raises(ConfigError, match="no split keyword"):
        run_campaign(parse_config({"task": {
            "kind": "program", "program": str(tmp_path / "initial.py"),
            "evaluator": str(tmp_path / "evaluate.py"), "splits": ["train"]}}),
            tmp_path / "p")


@pytest.mark.parametrize("splits", [["dev", "heldout"], ["test"], ["train"], ["dev", "dev"]])
def test_an_objective_never_reads_heldout_or_test(splits: list[str]) -> None:
    for data in ({"objective": {"splits": splits}},
                 {"promotion": {"goodhart": {"action": "switch", "switch_to": splits}}}):
        with pytest.raises(ConfigError):
            parse_config(data)


def test_replay_refuses_a_campaign_whose_objective_changed(tmp_path: Path) -> None:
    from recursor.replay.record import load_from_archive

    directory, _ = _run(tmp_path, "switch")
    manifest = json.loads((directory / "campaign.json").read_text())
    with pytest.raises(ConfigError, match="changed its objective"):
        load_from_archive(manifest["archive_url"])
