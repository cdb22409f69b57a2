"""The worlds task's trust boundary, attacked from the candidate's harness through the real
evaluator in the process sandbox (as a campaign runs it).

Docker is not covered: the worlds evaluator needs torch and transformers, which the sandbox
base image (python3-minimal and numpy) does not have, so it cannot run there. The protocol
tests drive a child directly from the test process (``host_evaluator``: local processes).

- The answer key: a harness that reads every *.json file and pipe on the file system, every
  other process's /proc files and memory, and walks its own objects, answers each held-out
  question in one step from whatever facts it found. It must find none: success 0.0. The same
  harness scores 1.0 when a world file is readable (the positive control), so the probe works.
- Provenance: a harness that rewrites every copy of recipe.py, curriculum.py, harness.py and
  policy.json it can reach, patches the evaluator's modules in its own process and prints
  forged rows, yields exactly the seed harness's rows; the controller stamps its own hashes.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recursor.config import ProcessSandboxConfig
from recursor.executors.tiny import build_model, build_tokenizer
from recursor.orchestrator.coevolution import RoutingError, stamp
from recursor.orchestrator.evaluation import (
    EvaluationOutcome,
    plan_request,
    run_evaluation,
    write_workspace,
)
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks.worlds import POLICY_DEFAULTS, WorldsTask, world
from recursor.tasks.worlds.episodes import Harness
from recursor.tasks.worlds.evaluate import child, component_ids
from recursor.tasks.worlds.policy import write_untrained
from recursor.tasks.worlds.protocol import ChildCrashed, HarnessError, ProtocolError
from recursor.tasks.worlds.stage import read_once, serve_once
from recursor.types import RunStatus, Split
from tests.helpers.worlds_harnesses import CHALLENGER_SNOOP, SEED, SNOOP, TAMPER

CONFIG = ProcessSandboxConfig(timeout_s=300, memory_mb=8192, max_processes=256)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WorldsTask, Path,
                                                                         ProcessSandbox]]:
    """A campaign directory (hidden from the sandbox) with a private world seed, its task cache
    and an untrained policy; and a process sandbox that hides it, as campaigns build it."""
    directory = tmp_path_factory.mktemp("campaign")
    task = WorldsTask(universes={"train": 1, "dev": 1, "heldout": 2}, questions=8)
    cache = directory / "cache"
    task.prepare(cache)
    write_untrained(cache / "policies" / "untrained", POLICY_DEFAULTS["model_options"],
                    build_tokenizer, build_model)
    sandbox = ProcessSandbox(hidden_paths=[directory])
    yield task, cache, sandbox
    sandbox.close()


def _files(harness: str, **extra: str) -> dict[str, str]:
    files = {**WorldsTask().seed_files(), "policy.json": json.dumps({"policy": "untrained"})}
    return {**files, "harness.py": harness, **extra}


def _heldout(cache: Path, files: dict[str, str], campaign: Any) -> EvaluationOutcome:
    task, _, sandbox = campaign
    return run_evaluation(task, sandbox, CONFIG, files, Split.HELDOUT, cache)


def test_the_harness_cannot_find_the_answer_key(campaign: Any) -> None:
    _, cache, _ = campaign
    outcome = _heldout(cache, _files(SNOOP), campaign)
    assert outcome.ok, (outcome.error, outcome.stderr[-3000:])
    assert "SNOOP scanned" in outcome.stderr, outcome.stderr[-3000:]
    report = json.loads(outcome.stderr.split("SNOOP scanned ", 1)[1].split(" facts")[0])
    assert report["files"] > 1000 and report["pids"] >= 1 and report["objects"] > 1000
    # the harness runs in a sandbox of its own: the world pipe is not even there
    assert not any("worlds" in pipe for pipe in report["pipes"]), report["pipes"]
    assert "facts 0 keys 0" in outcome.stderr
    assert outcome.metrics["mean_steps"] == 1.0  # it answered at once, from what it found
    assert outcome.metrics["success"] == 0.0
    # host-side evidence: none of its answers is a held-out answer
    answers = {q.qid: q.answer for u in world_file(cache, "heldout") for q in u.questions}
    assert set(outcome.instances) == set(answers)
    assert not any(outcome.instances.values())


def test_the_snooping_harness_works_when_a_world_file_is_readable(campaign: Any) -> None:
    """Positive control: the held-out file placed in the workspace is found and used.

    The world seed is private and random, and entity names come from one pool, so now and then
    (about 1 world in 40) two held-out universes ask the same question with different answers;
    the snoop's answer key is keyed by the question's text and can hold only one of them. Every
    question whose text has one answer must be right."""
    _, cache, _ = campaign
    leaked = (cache / "worlds" / "heldout.json").read_text()
    outcome = _heldout(cache, _files(SNOOP, **{"leaked.json": leaked}), campaign)
    assert outcome.ok, (outcome.error, outcome.stderr[-3000:])
    assert outcome.metrics["mean_steps"] == 1.0
    answers: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    questions = [q for u in world_file(cache, "heldout") for q in u.questions]
    for q in questions:
        answers.setdefault((q.start, q.chain), set()).add(q.answer)
    unambiguous = {q.qid for q in questions if len(answers[(q.start, q.chain)]) == 1}
    assert len(unambiguous) >= len(questions) // 2, "most questions have one answer"
    assert {qid: outcome.instances[qid] for qid in unambiguous} == dict.fromkeys(unambiguous, 1.0)


def world_file(cache: Path, split: str) -> list[world.Universe]:
    return [world.from_json(u)
            for u in json.loads((cache / "worlds" / f"{split}.json").read_text())]


def _corpus(campaign: Any, files: dict[str, str]) -> dict[str, Any]:
    """The corpus verdict for ``files``, run as ``coevolution.build_corpus`` runs it."""
    task, cache, sandbox = campaign
    plan = task.corpus_plan(cache, cycle=0, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        write_workspace(files, Path(tmp))
        result = sandbox.run(plan_request(plan, Path(tmp), CONFIG))
    assert result.status is RunStatus.OK and result.result, (result.error, result.stderr[-3000:])
    return result.result


def test_a_tampering_harness_changes_neither_rows_nor_provenance(campaign: Any) -> None:
    honest_files, tamper_files = _files(SEED), _files(TAMPER)
    honest, tampered = _corpus(campaign, honest_files), _corpus(campaign, tamper_files)
    assert honest["error"] is None and tampered["error"] is None, tampered["error"]
    assert honest["rows"] and tampered["rows"] == honest["rows"]
    rows = stamp(component_ids(tamper_files), tampered, "untrained")
    ids = component_ids(tamper_files)
    assert ids["harness"] != component_ids(honest_files)["harness"]
    assert ids["recipe"] == component_ids(honest_files)["recipe"]
    for row in rows:
        assert {k: row["provenance"][k] for k in ids} == ids
        assert row["provenance"]["source"] in ("solver", "policy")
        assert row["provenance"]["policy"] == ("solver" if row["provenance"]["source"] ==
                                               "solver" else "untrained")


# The pipe protocol: whatever the harness process sends, the evaluator neither hangs nor
# believes it; a breach is a HarnessError/ProtocolError (invalid), a crash is ChildCrashed.
HANG = SEED + "\n\ndef render(state):\n    import time\n    time.sleep(3600)\n"
OVERSIZE = SEED + "\n\ndef render(state):\n    return 'x' * (9 << 20)\n"
NOISE = SEED + '''

def render(state):
    import os
    for fd in range(3, 20):  # finds the reply channel and writes a forged, malformed reply
        try:
            os.write(fd, b"not json\\n")
        except OSError:
            pass
    return "question : " + state["question"] + " action :"
'''
DIES = SEED + "\n\ndef render(state):\n    import os\n    os._exit(3)\n"


def _states() -> list[dict[str, Any]]:
    universe = world.generate(1, "dev", 4)
    from recursor.tasks.worlds.tools import Episode, index_for

    index = index_for(universe)
    return [Episode(universe, q, index).state() for q in universe.questions]


@pytest.mark.parametrize(("harness", "deadline_s", "error", "match"), [
    (HANG, 2.0, ProtocolError, "did not answer within 2 s"),
    (OVERSIZE, 60.0, ProtocolError, "reply over"),
    (NOISE, 60.0, ProtocolError, "not a JSON reply"),
    (DIES, 60.0, ChildCrashed, "exited with status 3"),
])
@pytest.mark.usefixtures("host_evaluator")
def test_a_harness_that_breaks_the_protocol_is_a_recorded_failure(
        harness: str, deadline_s: float, error: type[Exception], match: str) -> None:
    started = time.monotonic()
    with pytest.raises(error, match=match), \
            child("harness", _files(harness), deadline_s=deadline_s) as process:
        Harness(process).render(_states())
    assert time.monotonic() - started < deadline_s + 10
    assert not _my_children("recursor.tasks.worlds.child")


def test_the_world_pipe_gives_its_data_once(tmp_path: Path) -> None:
    pipe = serve_once(b'[{"facts": "SECRET"}]', tmp_path / "pipes", timeout_s=30)
    assert read_once(pipe) == b'[{"facts": "SECRET"}]'
    deadline = time.monotonic() + 5
    while pipe.exists() and time.monotonic() < deadline:  # the feeder removes it
        time.sleep(0.01)
    assert not pipe.exists()
    # A second name for the same pipe stands for the sandbox's bind mount, which outlives the
    # host's name: once drained, a later reader (a child) gets end-of-file, not the data.
    fresh = serve_once(b"DATA", tmp_path / "pipes", timeout_s=30)
    mounted = tmp_path / "mounted.pipe"
    os.link(fresh, mounted)
    assert read_once(fresh) == b"DATA"
    fd = os.open(mounted, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert os.read(fd, 100) == b""
    finally:
        os.close(fd)


def test_the_controller_stamps_provenance_and_refuses_forged_labels() -> None:
    files = _files(SEED)
    ids = component_ids(files)
    row = {"prompt": "p", "completion": " c",
           "provenance": {"harness": "0123456789ab", "task": "worlds:q", "source": "solver"}}
    stamped = stamp(ids, {"components": ids, "rows": [row]}, "p1")
    assert stamped[0]["provenance"] == {**ids, "policy": "solver", "task": "worlds:q",
                                        "source": "solver"}
    with pytest.raises(RoutingError, match="not the ones sent"):
        stamp(ids, {"components": component_ids(_files(TAMPER)), "rows": [row]}, "p1")
    forged = {**row, "provenance": {"task": "worlds:q", "source": "oracle"}}
    with pytest.raises(RoutingError, match="source 'oracle'"):
        stamp(ids, {"components": ids, "rows": [forged]}, "p1")


@pytest.mark.usefixtures("host_evaluator")
def test_a_harness_missing_a_function_is_invalid_and_leaves_no_process() -> None:
    with pytest.raises(HarnessError, match="does not define parse, format_action, recover"), \
            child("harness", _files("def render(s):\n    return 'x'\n")):
        pass
    assert not _my_children("recursor.tasks.worlds.child")


def _my_children(needle: str) -> list[int]:
    """This process's children whose command line names ``needle`` (zombies included)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and needle.encode() in cmdline:
            found.append(int(entry.name))
    return found


def test_a_challenger_that_looks_for_other_splits_gets_nothing_and_is_recorded(
        campaign: Any) -> None:
    """The challenger runs in the data child: it scans every file, pipe, process and object
    for universes, finds none, and asks for questions on the held-out and test universes by
    their ids. Every such request is refused and recorded with what was asked; its valid
    questions on the training universe it was shown (every one-hop question there, less those
    the world already asks) are kept, labelled as generated."""
    verdict = _corpus(campaign, _files(SEED, **{"challenger.py": CHALLENGER_SNOOP}))
    report = verdict["challenger"]
    assert report["generated"] >= 1
    recorded = [(json.loads(r["asked"]), r["reason"]) for r in report["refused"]]
    other = [asked for asked, reason in recorded
             if reason == "not a training universe it was shown"]
    # it found no facts, so it asked only by the ids (five more requests had it found any)
    assert [asked["universe"] for asked in other] == ["heldout-3000", "test-4000"]
    assert other[0]["start"] == "found 0 facts"  # it found nothing to carry out
    assert all(reason == "an existing question" for _, reason in recorded[2:])
    tasks = {row["provenance"]["task"] for row in verdict["rows"]}
    assert not any("heldout" in t or "test" in t or "dev" in t for t in tasks)
    generated = [row for row in verdict["rows"] if "-g0" in row["provenance"]["task"]]
    assert generated and all(row["provenance"]["difficulty_target"] == 0.5
                             for row in generated)
