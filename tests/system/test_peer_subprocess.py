"""An evaluator that runs the candidate with ``subprocess`` (a script of its own that imports
it) and unpickles what that script wrote runs unchanged: the script is a candidate run of its
own, its result file comes back, and a candidate that pickles a call, or rewrites a file the
evaluator wrote, earns nothing by it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from tests.helpers.peer_import import Bodies, peer_campaign
from tests.helpers.peer_subprocess import BODIES, EVALUATOR

ORDER = ["closer", "pickles a call", "moves the target"]


def _campaign(tmp_path: Path, order: list[str], sandbox: str) -> tuple[dict[str, Any], Archive]:
    return peer_campaign(tmp_path, EVALUATOR, Bodies(order, BODIES), sandbox)


def test_an_evaluator_that_runs_a_child_script_works_and_is_not_fooled(tmp_path: Path) -> None:
    nodes, archive = _campaign(tmp_path, ORDER, "process")
    try:
        start = nodes["start"]
        # the grid of 7 points on [-3, 3] has (1, -1) nearest (1.5, -0.5)
        assert start.status == "done" and start.score == pytest.approx(1 / (1 + 0.5 ** 0.5))
        stdout = archive.logs(start.id, "dev.stdout")[-1].content
        assert "searched" in stdout  # the child's own output reached the evaluator
        assert nodes["closer"].score == pytest.approx(1.0)
        pickled = nodes["pickles a call"]
        assert pickled.status == "failed" and pickled.score is None, pickled.error
        assert "builtins.eval" in pickled.error and "not handed back" in pickled.error
        moved = nodes["moves the target"]
        assert moved.status == "done" and moved.score == pytest.approx(
            1 / (1 + (1.5 ** 2 + 0.5 ** 2) ** 0.5)), moved.error
        note = archive.logs(moved.id, "dev.stdout")[-1].content
        assert "target.json: a file of that path exists here: not replaced" in note
    finally:
        archive.close()


def test_on_docker_too(tmp_path: Path, docker_image: str) -> None:
    nodes, archive = _campaign(tmp_path, ["closer"], "docker")
    archive.close()
    assert nodes["start"].score == pytest.approx(1 / (1 + 0.5 ** 0.5))
    assert nodes["closer"].score == pytest.approx(1.0)
