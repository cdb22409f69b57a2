"""The built-in ``worlds`` task: an agent (harness + tiny policy LM) answering multi-hop
questions with search tools over rule-generated fictional universes.

Components (files of the workspace):

- ``harness`` — ``harness.py``: prompt rendering, action parsing, error recovery;
- ``policy`` — ``policy.json``: names the policy checkpoint (a tiny GPT-2 trained here);
- ``data`` — ``recipe.py``: which trajectories a policy step trains on;
- ``curriculum`` — ``curriculum.py``: which training tasks each policy step draws on.

Universes are generated in :meth:`WorldsTask.prepare` from the task's private ``world_seed``
(62 random bits unless configured; a configured one makes every split public, since anyone can
regenerate the universes from the code) and written per split under ``cache/worlds``, which
the sandbox never sees. An evaluation receives only its own split, through a named pipe the
evaluator drains before any candidate code starts (:mod:`recursor.tasks.worlds.stage`; why,
in :mod:`recursor.tasks.worlds.evaluate`). Policies live under ``cache/policies/<id>``.
"""

from __future__ import annotations

import ast
import json
import secrets
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from recursor import pyast
from recursor.content import content_id
from recursor.feed import serve_once
from recursor.mutation import MutationPrimitive
from recursor.plan import Mount, SandboxLimits, trusted_module_command
from recursor.tasks._base import Component, EvaluationPlan, Objective, PolicyTask
from recursor.tasks.worlds import evaluate, world
from recursor.tasks.worlds.evaluate import CHALLENGER, CURRICULUM, HARNESS, POLICY, RECIPE
from recursor.tasks.worlds.policy import readable_by_all
from recursor.tasks.worlds.primitives import worlds_primitives
from recursor.types import ChangeKind, Split

SEED_DIR = Path(__file__).parent / "seed"
REQUIRED = {HARNESS: ("render", "parse", "format_action", "recover"), RECIPE: ("select",),
            CURRICULUM: ("tasks",)}
OPTIONAL = {CHALLENGER: ("propose",)}  # checked when present (campaigns from before it lack it)
POLICY_DEFAULTS: dict[str, Any] = {
    "model_options": {"n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 192},
    "sft": {"max_steps": 400, "learning_rate": 3e-3, "per_device_train_batch_size": 32,
            "max_length": 192},
    "grpo": {"max_steps": 60, "learning_rate": 1e-4, "per_device_train_batch_size": 16,
             "num_generations": 8, "max_completion_length": 3, "temperature": 1.0},
}
REWARD = "recursor.tasks.worlds.reward:match_target"

DESCRIPTION = """\
Improve an agent that answers multi-hop questions ("who or what is the country of the
birthplace of the mentor of X ?", 1 to 4 hops) about fictional universes, using the tools
search (BM25 over articles), open (an article by title) and answer. The agent is a tiny GPT-2
policy (trained here from scratch) inside a harness (harness.py) that renders the episode's
state as the prompt, parses the policy's completion into an action, and recovers from invalid
ones. recipe.py selects the trajectories a policy step trains on; curriculum.py chooses the
training tasks per cycle. The score is the fraction of questions answered right.
Policies are trained on trajectories rendered under the adopted harness, so a harness change
pays off fully only after the policy is retrained under it.
"""


WorldSplit = Literal["train", "dev", "heldout", "test"]


class WorldsTask(PolicyTask):
    """Co-evolve a search agent's harness and policy; held-out and test universes are never
    shown (test ones are evaluated only for the final report)."""

    name = "worlds"
    description = DESCRIPTION
    # success is a fraction of questions: a held-out drop of at most 5 points
    objective = Objective("success", "maximize", heldout_tolerance=0.05)
    # test: universes of its own (world.SPLIT_SEEDS), evaluated only for the final report
    splits = (Split.DEV, Split.HELDOUT, Split.TEST)
    policy_path = POLICY
    routing_component = "harness"

    def __init__(self, universes: Mapping[WorldSplit, int] | None = None, questions: int = 24,
                 world_seed: int | None = None, policy: Mapping[str, Any] | None = None,
                 support_k: int = 4, challenger_target: float | None = 0.5) -> None:
        self.universes = {"train": 10, "dev": 3, "heldout": 3, "test": 3, **(universes or {})}
        self.support_k = support_k
        self.challenger_target = challenger_target
        self.questions = questions
        self.world_seed = world_seed
        options = dict(policy or {})
        self.policy_options = {key: {**POLICY_DEFAULTS[key], **options.get(key, {})}
                               for key in POLICY_DEFAULTS}

    def components(self) -> Sequence[Component]:
        return [Component("harness", ChangeKind.HARNESS, [HARNESS]),
                Component("policy", ChangeKind.POLICY, [POLICY]),
                Component("data", ChangeKind.DATA, [RECIPE]),
                Component("curriculum", ChangeKind.CURRICULUM, [CURRICULUM]),
                Component("challenger", ChangeKind.CURRICULUM, [CHALLENGER])]

    def seed_files(self) -> Mapping[str, str]:
        files = {name: (SEED_DIR / name).read_text() for name in (*REQUIRED, *OPTIONAL)}
        files[POLICY] = json.dumps({"policy": "none"}) + "\n"
        return files

    def prepare(self, cache_dir: Path) -> None:
        """Write every split's universes (once) and the policies folder."""
        root = Path(cache_dir) / "worlds"
        root.mkdir(parents=True, exist_ok=True)
        (Path(cache_dir) / "policies").mkdir(exist_ok=True)
        seed_file = root / "world_seed"
        if not seed_file.exists():
            seed = self.world_seed if self.world_seed is not None else secrets.randbits(62)
            seed_file.write_text(str(seed))
        seed = int(seed_file.read_text())
        for split, count in self.universes.items():
            path = root / f"{split}.json"
            if not path.exists():
                universes = world.split_universes(split, count, self.questions, seed)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps([world.to_json(u) for u in universes]))
                tmp.replace(path)

    def static_check(self, files: Mapping[str, str]) -> str | None:
        for path, functions in {**REQUIRED, **OPTIONAL}.items():
            source = files.get(path)
            if source is None and path in OPTIONAL:
                continue
            if source is None:
                return f"missing {path}"
            try:
                module = pyast.parse(source)
            except SyntaxError as exc:
                return f"{path} does not parse: {exc.msg} (line {exc.lineno})"
            defined = {n.name for n in module.body if isinstance(n, ast.FunctionDef)}
            missing = [f for f in functions if f not in defined]
            if missing:
                return f"{path} does not define {', '.join(missing)}()"
        try:
            policy = json.loads(files.get(POLICY, ""))["policy"]
        except (ValueError, KeyError, TypeError):
            return f'{POLICY} must be {{"policy": "<checkpoint id>"}}'
        if not isinstance(policy, str) or not policy:
            return f"{POLICY}: policy must name a checkpoint"
        return None

    def _plan(self, mode: str, split: str, cache_dir: Path, extra: Sequence[str]) -> EvaluationPlan:
        """The evaluator's command; the split's universes go through a pipe fed once (a file
        would stay readable to the candidate's children, see ``evaluate``)."""
        limits = SandboxLimits(wall_time_s=600.0, memory_mb=8192, max_processes=256,
                               output_bytes=200_000)
        data = (Path(cache_dir) / "worlds" / f"{split}.json").read_bytes()
        pipe = serve_once(data, Path(cache_dir) / "worlds" / "pipes",
                          timeout_s=limits.wall_time_s + 60)
        command = trusted_module_command(
            "recursor.tasks.worlds.evaluate", mode, "--workspace", "/workspace", "--worlds",
            f"/worlds/{split}.pipe", "--policies", "/policies", *extra)
        return EvaluationPlan(
            command=command,
            mounts=[Mount(pipe, f"/worlds/{split}.pipe", feed=True),
                    Mount(Path(cache_dir) / "policies", "/policies")],
            env={"OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false",
                 "HF_HUB_OFFLINE": "1"}, limits=limits)

    def evaluation(self, split: Split, cache_dir: Path) -> EvaluationPlan:
        """Dev and test: greedy decoding. Held-out (what gates a promotion) also runs the
        policy ``support_k`` times sampled, for pass@k, best@k and its actions' diversity."""
        extra = ["--samples", str(self.support_k)] \
            if Split(split) is Split.HELDOUT and self.support_k else []
        return self._plan("eval", Split(split).value, cache_dir, extra)

    # the policy interface (PolicyTask) ---------------------------------------------------
    def corpus_plan(self, cache_dir: Path, cycle: int, seed: int,
                    method: str = "sft") -> EvaluationPlan:
        extra = ["--cycle", str(cycle), "--seed", str(seed)]
        if self.challenger_target is not None:
            extra += ["--target", repr(self.challenger_target)]
        return self._plan("corpus", "train", cache_dir, extra + (["--rl"] if method == "grpo"
                                                                  else []))

    def training_job(self, data: Path, seed: int, method: str = "sft",
                     base: Path | None = None) -> dict[str, Any]:
        if method == "grpo":
            if base is None:
                raise ValueError("a grpo policy step needs a trained policy to start from")
            return {"kind": "grpo", "model": str(base), "data": str(data), "seed": seed,
                    "reward": REWARD, "config": dict(self.policy_options["grpo"])}
        return {"kind": "sft", "model": "tiny-gpt2", "data": str(data), "seed": seed,
                "model_options": dict(self.policy_options["model_options"]),
                "config": dict(self.policy_options["sft"])}

    def content_id(self, text: str) -> str:
        return content_id(text)

    def provenance_ids(self, files: Mapping[str, str]) -> dict[str, str]:
        return evaluate.component_ids(files)

    def policy_name(self, files: Mapping[str, str]) -> str:
        return evaluate.policy_name(files)

    def policy_checkpoint(self, files: Mapping[str, str], cache_dir: Path) -> Path | None:
        policy = json.loads(files[POLICY])["policy"]
        return None if policy == "none" else Path(cache_dir) / "policies" / policy

    def install_policy(self, checkpoint: Path, cache_dir: Path, policy_id: str) -> str:
        target = Path(cache_dir) / "policies" / policy_id
        if not target.exists():
            tmp = target.with_name(target.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(checkpoint, tmp)
            readable_by_all(tmp)
            tmp.replace(target)
        return json.dumps({"policy": policy_id}) + "\n"

    def mutation_primitives(self) -> Sequence[MutationPrimitive]:
        return worlds_primitives()


__all__ = ["WorldsTask"]
