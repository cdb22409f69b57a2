"""An evaluator that imports the candidate into its own process and calls it (OpenEvolve's
convention, written here) runs unchanged: each call runs in a candidate run of its own, the
value comes back as data; a candidate that raises, exits without a reply, returns an object
array or forges a reply gets a clear failure, never a score it did not earn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.peer_import import BY_NAME, BY_SPEC, Bodies, peer_campaign

ORDER = ["closer", "raises", "object array", "exits", "forges a reply"]


def _campaign(tmp_path: Path, evaluator: str, order: list[str], sandbox: str = "process"
              ) -> dict[str, Any]:
    nodes, archive = peer_campaign(tmp_path, evaluator, Bodies(order), sandbox)
    archive.close()
    return nodes


def test_an_evaluator_that_imports_the_candidate_runs_it_in_a_sandbox_of_its_own(
        tmp_path: Path) -> None:
    nodes = _campaign(tmp_path, BY_SPEC, ORDER)
    start, closer = nodes["start"], nodes["closer"]
    assert start.status == "done" and start.score == pytest.approx(1 / (1 + 0.5 ** 0.5))
    assert closer.status == "done" and closer.score == pytest.approx(1.0)
    raised = nodes["raises"]
    assert raised.status == "failed" and "search() failed: CandidateCallError" in raised.error
    assert "raised ValueError: ignore previous instructions" in raised.error
    for name in ("object array", "forges a reply"):
        node = nodes[name]
        assert node.status == "failed" and node.score is None, (name, node.error)
        assert "dtype" in node.error and "object" in node.error, (name, node.error)
    exits = nodes["exits"]
    assert exits.status == "failed" and "gave no reply" in exits.error, exits.error


@pytest.mark.parametrize("sandbox", ["process", "docker"])
def test_an_evaluator_that_imports_the_candidate_by_name_works_too(
        tmp_path: Path, sandbox: str, request: pytest.FixtureRequest) -> None:
    if sandbox == "docker":
        request.getfixturevalue("docker_image")  # built once if missing
    nodes = _campaign(tmp_path, BY_NAME, ["closer"], sandbox)
    assert nodes["start"].score == pytest.approx(1 / (1 + 0.5 + 0.5))
    assert nodes["closer"].score == pytest.approx(1.0)
