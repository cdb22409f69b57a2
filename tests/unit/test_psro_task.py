"""The psro task's plumbing: config and loading, what proposers see (never a held-out game),
what a dev evaluation mounts, and the baselines' agreement with OpenSpiel's meta-solvers."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recursor.archive import Archive
from recursor.config import PsroTaskConfig, parse_config
from recursor.errors import ConfigError
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.tasks.loading import build_task
from recursor.tasks.psro import DESCRIPTION, PSROTask, games, solver_source
from recursor.tasks.psro._protocol import SOLVER_FILE
from recursor.types import ChangeKind, Split

HELDOUT_WORDS = [*games.SPLITS["heldout"], "liars", "goofspiel", "disc"]


def test_config_builds_the_task() -> None:
    config = parse_config({"task": {"kind": "psro", "iterations": 12, "solver_timeout_s": 50}})
    assert isinstance(config.task, PsroTaskConfig)
    task = build_task(config.task)
    assert isinstance(task, PSROTask)
    assert (task.iterations, task.solver_timeout_s) == (12, 50.0)
    with pytest.raises(ConfigError, match="iterations"):
        parse_config({"task": {"kind": "psro", "iterations": 0}})
    with pytest.raises(ConfigError, match="unknown field"):
        parse_config({"task": {"kind": "psro", "games": ["kuhn_poker"]}})


def test_example_campaign_parses() -> None:
    root = Path(__file__).resolve().parents[2]
    from recursor.config import load_config

    config = load_config(root / "examples" / "campaigns" / "psro.yaml")
    assert isinstance(config.task, PsroTaskConfig)
    assert [p.kind for p in config.proposers] == ["mutation", "optuna"]


def test_description_names_no_heldout_game() -> None:
    task = PSROTask()
    for text in (DESCRIPTION, task.proposer_hints(), json.dumps(task.seed_files())):
        assert not [w for w in HELDOUT_WORDS if w in text.lower()]


def test_a_dev_evaluation_mounts_only_dev_trees(tmp_path: Path) -> None:
    task = PSROTask(iterations=7)
    plan = task.evaluation(Split.DEV, tmp_path)
    mounted = {m.source for m in plan.mounts}
    assert mounted == {games.cache_path(tmp_path, g) for g in games.SPLITS["dev"]}
    assert not [w for w in HELDOUT_WORDS if w in json.dumps([str(m) for m in mounted]).lower()]
    assert all(m.target.startswith("/cache/") for m in plan.mounts)
    assert list(plan.command[1:6]) == ["-P", "-s", "-m", "recursor.guest",
                                      "recursor.tasks.psro.evaluate"]
    held = task.evaluation(Split.HELDOUT, tmp_path)
    assert {m.source for m in held.mounts} == {games.cache_path(tmp_path, g)
                                              for g in games.SPLITS["heldout"]}


class RecordingProposer(Proposer):
    """Writes every ProposalContext it gets to ``log`` (JSON lines); proposes a blend."""

    name = "recording"

    def __init__(self, log: str) -> None:
        self.log = Path(log)

    def propose(self, context: ProposalContext) -> Proposal:
        views = [context.parent, *context.inspirations, *context.recent_failures,
                 *context.history]
        record = {"description": context.task_description,
                  "views": [{"metrics": dict(v.metrics), "files": dict(v.files),
                             "rationale": v.rationale, "error": v.error} for v in views]}
        with self.log.open("a") as out:
            out.write(json.dumps(record) + "\n")
        source = context.parent.files[SOLVER_FILE]
        step = sum(1 for v in context.history if v.proposer == self.name) + 1
        # a new blend whatever the parent's is (an unchanged file would be a duplicate, which
        # does not count against the budget)
        blended = re.sub(r"blend = [0-9.]+", f"blend = {0.1 * step:.1f}", source, count=1)
        return Proposal(ChangeKind.ALGORITHM, f"blend {0.1 * step:.1f}", {SOLVER_FILE: blended})


@pytest.mark.timeout(600)
def test_heldout_games_never_reach_a_proposal_context(tmp_path: Path) -> None:
    log = tmp_path / "contexts.jsonl"
    config = parse_config({
        "name": "psro-heldout", "task": {"kind": "psro", "iterations": 3},
        "proposers": [{"kind": "plugin", "class_path": f"{__name__}:RecordingProposer",
                       "options": {"log": str(log)}}],
        "budget": {"max_evals": 3}, "concurrency": 1, "selection": {"kind": "greedy"},
        "promotion": {"min_improvement": 0.0}})
    run_campaign(config, tmp_path / "c", NullReporter())
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == 3
    text = log.read_text().lower()
    assert not [w for w in HELDOUT_WORDS if w in text]
    assert "kuhn_poker" in text  # dev metrics do reach proposers
    # non-vacuous: the held-out games were evaluated, and that stayed in the archive
    manifest = json.loads((tmp_path / "c" / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        rows = archive.evaluations([n.id for n in archive.nodes(manifest["campaign_id"])])
        heldout = [r for r in rows if r.split == Split.HELDOUT.value]
        assert heldout and set(heldout[0].instances) == set(games.SPLITS["heldout"])
    finally:
        archive.close()


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["prd", "regret_matching"])
def test_baselines_equal_openspiel_meta_solvers(name: str) -> None:
    """PRD and regret matching are OpenSpiel's updates (fewer steps): same steps, same answer."""
    from open_spiel.python.algorithms import projected_replicator_dynamics, regret_matching

    module = _load(Path(games.__file__).parent / "solvers" / f"{name}.py", f"_b_{name}")
    rng = np.random.default_rng(3)
    a = rng.normal(size=(7, 5))
    payoffs = np.stack([a, -a])
    ours = module.meta_solver(payoffs, 4)
    if name == "prd":
        theirs = projected_replicator_dynamics.projected_replicator_dynamics(
            [payoffs[0], payoffs[1]], prd_iterations=500, prd_dt=0.08, prd_gamma=1e-6)
    else:
        theirs = regret_matching.regret_matching([payoffs[0], payoffs[1]], iterations=500,
                                                 gamma=1e-6)
    for x, y in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)


def test_nash_baseline_solves_the_matrix_game() -> None:
    module = _load(Path(games.__file__).parent / "solvers" / "nash.py", "_b_nash")
    a = games.biased_rps()
    x, y = module.meta_solver(np.stack([a, -a]), 0)
    np.testing.assert_allclose(x, [0.2, 0.6, 0.2], atol=1e-9)
    np.testing.assert_allclose(y, [0.2, 0.6, 0.2], atol=1e-9)
    assert "linprog" in solver_source("nash")


def _sandbox_verdict(sandbox: Any, config: Any, cache: Path, source: str) -> Any:
    from recursor.orchestrator.evaluation import run_evaluation

    task = PSROTask(iterations=5, solver_timeout_s=60)
    task.prepare(cache)
    return run_evaluation(task, sandbox, config, {SOLVER_FILE: source}, Split.DEV, cache)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["process", pytest.param("docker", marks=pytest.mark.docker)])
@pytest.mark.usefixtures("host_evaluator")
def test_sandboxed_evaluation_matches_the_in_process_one(tmp_path: Path, kind: str,
                                                          request: pytest.FixtureRequest) -> None:
    """The evaluator, its solver child and the cache mounts work inside both sandboxes (the
    uniform seed needs numpy only, which the docker base image has)."""
    from recursor.config import DockerSandboxConfig, ProcessSandboxConfig
    from recursor.sandbox import ProcessSandbox
    from recursor.tasks.psro.evaluate import evaluate

    if kind == "docker":
        sandbox = request.getfixturevalue("docker_sandbox_factory")()
        config: Any = DockerSandboxConfig(image=request.getfixturevalue("docker_image"))
    else:
        sandbox, config = ProcessSandbox(), ProcessSandboxConfig()
    cache = tmp_path / "cache"
    outcome = _sandbox_verdict(sandbox, config, cache, solver_source("uniform"))
    assert outcome.error is None, (outcome.error, outcome.stderr)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / SOLVER_FILE).write_text(solver_source("uniform"))
    direct = evaluate(workspace, "dev", cache, 5)
    assert outcome.instances == pytest.approx(direct["instances"], rel=1e-12)
    hostile = _sandbox_verdict(sandbox, config, cache, solver_source("uniform").replace(
        "    return [normalize(m) for m in mixtures]", "    return [m * np.nan for m in mixtures]"))
    assert hostile.error is not None and "non-finite" in hostile.error
