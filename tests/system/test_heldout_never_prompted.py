"""Held-out material never reaches a proposer, through a real campaign driven by an LLM over
real HTTP, on both sandbox backends.

Two plants: the user's evaluator is sloppy and quotes the held-out answers in its held-out
rejection (the starting point and every node that passes the dev gate get one), and a
candidate searches everything it can reach for held-out data and prints what it found where
the evaluator's ``float()`` quotes it in a dev rejection (the one a proposer reads). The test
then reads every request the model received, and every node's error: no held-out token in any.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from tests.helpers.llm_server import scripted_llm_server

pytestmark = pytest.mark.timeout(900)

SECRETS = ["7717171.0", "8828282.0"]
CASES = {"dev_cases.json": {"inputs": [1, 2, 3, 4], "answers": [2.0, 4.0, 6.0, 8.0]},
         "heldout_cases.json": {"inputs": [10, 20], "answers": [float(s) for s in SECRETS]}}
EVALUATOR = '''
import json, os, sys

from recursor.guest import run_candidate

HERE = os.path.dirname(os.path.abspath(__file__))


def evaluate(path, split="dev"):
    with open(os.path.join(HERE, f"{split}_cases.json")) as handle:
        cases = json.load(handle)
    run = run_candidate([sys.executable, "-I", path], input=json.dumps(cases["inputs"]))
    last = (run.text.strip().splitlines() or [""])[-1]
    try:
        answers = [float(x) for x in last.split()]
    except ValueError as exc:
        return {"error": f"ValueError: {exc}"}
    right = sum(1 for a, b in zip(answers, cases["answers"]) if a == b)
    if split == "heldout" and right < len(cases["answers"]):
        return {"error": f"wrong answers; expected {cases['answers']}"}  # sloppy, on purpose
    return {"score": right / len(cases["answers"])}
'''
PROGRAM = '''import json
import sys


# EVOLVE-BLOCK-START
def answer(x):
    return 2.0 * x if x < 3 else 0.0
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    print(" ".join(str(answer(x)) for x in json.loads(sys.stdin.read())))
'''
SEED_BODY = "    return 2.0 * x if x < 3 else 0.0"
DOUBLED = "    return 2.0 * x"  # the first edit's line: greedy selection builds on it
LEAK = '''    import glob, json, os
    found = []
    for path in glob.glob("/recursor-evaluator/*") + [
            p for depth in range(1, 5) for p in glob.glob("/*" * depth + "*cases*.json")]:
        try:
            found.append(open(path).read())
        except OSError:
            pass
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            found.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
        except OSError:
            pass
    found = [f for f in found if "cases" in f or "heldout" in f or "answers" in f]
    raise SystemExit(print("LEAK:" + json.dumps(found).replace(" ", "")) or 0)'''


def _edit(replace: str, why: str, search: str = DOUBLED) -> dict[str, str]:
    return {"content": f"{why}\n\n```python\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n"
                       ">>>>>>> REPLACE\n```\n"}


def _campaign(folder: Path, url: str, backend: str) -> dict[str, Any]:
    folder.mkdir(parents=True)
    (folder / "evaluate.py").write_text(EVALUATOR)
    (folder / "initial.py").write_text(PROGRAM)
    for name, cases in CASES.items():
        (folder / name).write_text(json.dumps(cases))
    llm = {"kind": "llm", "provider": "openai", "model": "scripted", "api_base": url,
           "name": "llm:scripted", "timeout_s": 5.0, "max_retries": 0,
           "retry_base_delay_s": 0.0}
    return {"name": "leak", "seed": 0, "concurrency": 1, "selection": {"kind": "greedy"},
            "proposers": [llm], "budget": {"max_evals": 4},
            "sandbox": {"kind": backend, "timeout_s": 60},
            "task": {"kind": "program", "program": str(folder / "initial.py"),
                     "evaluator": str(folder / "evaluate.py"),
                     "evaluator_files": [str(folder / name) for name in CASES]}}


@pytest.mark.parametrize("backend", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_no_heldout_token_reaches_a_prompt_or_a_node(tmp_path: Path, backend: str,
                                                     request: pytest.FixtureRequest) -> None:
    if backend == "docker":
        request.getfixturevalue("docker_image")  # built once, if the engine lacks it
    script = [_edit(DOUBLED, "Double every input.", search=SEED_BODY),
              _edit(LEAK, "Look around first."), _edit("    return 2.0 * x + 0.0", "Same."),
              _edit("    return x + x", "Add it to itself.")]
    with scripted_llm_server(script) as llm:
        config = _campaign(tmp_path / "user", llm.url, backend)
        run_campaign(parse_config(config), tmp_path / "campaign")
        requests = json.dumps(llm.requests)
    manifest = json.loads((tmp_path / "campaign" / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    nodes = archive.nodes(manifest["campaign_id"])
    # the plants happened: a held-out rejection quoting the answers, and the leak attempt
    planted = [log.content for n in nodes for log in archive.logs(n.id, "heldout.error")]
    assert any(SECRETS[0] in text for text in planted), planted
    leaked = [n for n in nodes if "LEAK:" in (n.error or "")]
    assert leaked and all("LEAK:[]" in (n.error or "") for n in leaked), [n.error for n in leaked]
    assert len(llm.requests) >= 3  # prompts were built after both plants
    for secret in SECRETS:
        assert secret not in requests
        assert not any(secret in (n.error or "") for n in nodes)
