"""The parents and the planted candidates of the false-promotion experiment, per task.

- cfr: the task's own seed (vanilla CFR); noise plants add ``eps * legal`` (eps ~1e-12) to
  the regrets.
- worlds: a stochastic harness (:data:`NOISY_HARNESS`: the seed harness whose ``parse``
  reads the right action off the observations and drops it with probability ``FLAKE``,
  drawn from ``_NOISE = random.Random(0)``) served as the seed of :class:`NoisyWorldsTask`;
  noise plants only reseed ``_NOISE``, so a plant and its parent have the same expected
  success and differ by chance alone.
- The gameable dev split (cfr): hooks that recognise the dev games by the shapes of their
  arrays and play CFR+-like rules there, vanilla CFR everywhere else.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from experiments._plants import (
    NO_EFFECT,
    Plant,
    equivalent,
    no_effect_plants,
    perturb_return,
    reseed,
)
from recursor.tasks.cfr import CFRTask, games
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.tasks.worlds import SEED_DIR, WorldsTask
from recursor.types import Split

FLAKE = 0.05  # chance that the noisy harness drops an action (the episode then fails)
# The noisy harness's parse: it reads the action off the observations (the policy's text is
# ignored) and drops it with probability FLAKE. Reading the answer off the tools makes success
# high without a well-trained policy, which would take ~30 min of CPU to train here.
NOISY_PARSE = """def _solve(state):
    question, history = state["question"], state["history"]
    subject = question.split()[-2]
    opened = [s for s in history if s["action"]["tool"] == "open" and s["valid"]]
    if not history:
        return {"tool": "search", "arg": subject}
    if not opened:
        return {"tool": "open", "arg": subject}
    chain = list(reversed(_asked(question)))
    if len(opened) > len(chain):
        return None
    relation = chain[len(opened) - 1]
    for sentence in _sentences(opened[-1]["observation"]):
        words = sentence.split()
        if relation in words:
            tool = "answer" if len(opened) == len(chain) else "open"
            return {"tool": tool, "arg": words[-2]}
    return None


def parse(text, state):
    if _draw(state) < FLAKE:
        return None
    return _solve(state)


"""


DRAWS = {
    # one stream for the whole evaluation: the k-th action of any split sees the k-th draw
    "stream": ("_NOISE = random.Random(0)  # the harness's only randomness",
               "def _draw(state):\n    return _NOISE.random()\n\n\n"),
    # a draw per question and step: independent between questions, and so between splits
    "question": ("NOISE_SEED = 0  # the harness's only randomness",
                 "def _draw(state):\n"
                 "    key = f\"{NOISE_SEED}|{state['question']}|{state['step']}\"\n"
                 "    return random.Random(key).random()\n\n\n"),
}
RESEEDED = {"stream": "_NOISE", "question": "NOISE_SEED"}  # what a noise plant reseeds


def _noisy_harness(design: str) -> str:
    constant, draw = DRAWS[design]
    seed = (SEED_DIR / "harness.py").read_text()
    head, _, rest = seed.partition("def parse(text, state):\n")
    _, _, tail = rest.partition("def recover(")
    body = (head + draw + NOISY_PARSE + "def recover(" + tail).replace(
        "# EVOLVE-BLOCK-END\n", f"FLAKE = {FLAKE}  # chance that an action is dropped\n"
        f"{constant}\n# EVOLVE-BLOCK-END\n", 1)
    head, _, rest = body.partition('"""\n\n')  # after the module docstring
    return f'{head}"""\n\nimport random\n\n{rest}'


NOISY_HARNESS = {design: _noisy_harness(design) for design in DRAWS}


class NoisyWorldsTask(WorldsTask):
    """The worlds task whose seed harness is ``NOISY_HARNESS["stream"]`` (a stochastic
    harness); everything else, evaluator and splits included, is the built-in task's."""

    design = "stream"

    def seed_files(self) -> Mapping[str, str]:
        return {**super().seed_files(), "harness.py": NOISY_HARNESS[self.design]}


class PerQuestionNoisyWorldsTask(NoisyWorldsTask):
    """The same, with ``NOISY_HARNESS["question"]``: a draw per question and step."""

    design = "question"


def class_path(design: str) -> str:
    """The plug-in class path of the task with the ``design`` harness."""
    cls = NoisyWorldsTask if design == "stream" else PerQuestionNoisyWorldsTask
    return f"{cls.__module__}:{cls.__qualname__}"


def cfr_parent() -> str:
    return str(CFRTask().seed_files()[HOOK_FILE])


def plants(task: str, n_each: int, n_noise: int, seed: int,
           design: str = "stream") -> list[Plant]:
    """``n_each`` plants of every no-effect kind (fewer where the program has fewer distinct
    ones) and ``n_noise`` noise plants of ``task``'s planted file (worlds: of the ``design``
    harness), each checked."""
    parent = cfr_parent() if task == "cfr" else NOISY_HARNESS[design]
    out = [p for kind in NO_EFFECT for p in no_effect_plants(parent, kind, n_each, seed)]
    rng = random.Random(f"{seed}-noise")
    for i in range(n_noise):
        noisy = (perturb_return(parent, "update_regrets", rng.uniform(1e-13, 1e-11))
                 if task == "cfr" else reseed(parent, RESEEDED[design], i + 1))
        if noisy is None:
            raise ValueError(f"the {task} parent has no place for a noise plant")
        out.append(Plant("noise", i, noisy))
    check(task, parent, out)
    return out


def check(task: str, parent: str, planted: Sequence[Plant]) -> None:
    """Every plant parses, passes the task's static check, differs from the parent and from
    every other plant, and (no-effect kinds) is equivalent to the parent; ValueError if not."""
    checker = CFRTask() if task == "cfr" else WorldsTask()
    base = dict(checker.seed_files())
    path = HOOK_FILE if task == "cfr" else "harness.py"
    seen = {parent}
    for plant in planted:
        label = f"{task} plant {plant.kind} {plant.index}"
        reason = checker.static_check({**base, path: plant.source})
        if reason is not None:
            raise ValueError(f"{label} fails the task's static check: {reason}")
        if plant.source in seen:
            raise ValueError(f"{label} repeats the parent or another plant")
        seen.add(plant.source)
        if plant.kind in NO_EFFECT and not equivalent(plant.kind, parent, plant.source):
            raise ValueError(f"{label} is not equivalent to its parent")


# the gameable dev split --------------------------------------------------------------------
def player_shapes(cache: Path, split: Split) -> set[tuple[int, int]]:
    """(infosets of one player, actions) of every game of ``split``: the shapes of the arrays
    the hooks receive (builds the trees into ``cache`` when missing; needs pyspiel)."""
    shapes = set()
    for game in games.SPLITS[split.value]:
        tree = games.load_tree(game, cache)
        starts = [int(s) for s in tree.player_start]
        shapes |= {(b - a, tree.num_actions) for a, b in zip(starts, starts[1:], strict=False)}
    return shapes


GAMING_RULES = {
    # regret matching+ on the dev games only
    1: ("    if cum_regret.shape in SPECIAL_SHAPES:\n"
        "        return np.maximum(cum_regret + inst_regret, 0.0)\n", ""),
    # and linear averaging there too (CFR+ on dev, vanilla CFR elsewhere)
    2: ("    if cum_regret.shape in SPECIAL_SHAPES:\n"
        "        return np.maximum(cum_regret + inst_regret, 0.0)\n",
        "    if cum_policy.shape in SPECIAL_SHAPES:\n"
        "        return cum_policy + t * reach * policy\n"),
    # and Discounted CFR there (alpha 1.5, beta 0, gamma 2)
    3: ("    if cum_regret.shape in SPECIAL_SHAPES:\n"
        "        regret = cum_regret + inst_regret\n"
        "        return np.where(regret > 0, regret * t**1.5 / (t**1.5 + 1), regret * 0.5)\n",
        "    if cum_policy.shape in SPECIAL_SHAPES:\n"
        "        return cum_policy + t * t * reach * policy\n"),
}


def gaming_hooks(step: int, shapes: set[tuple[int, int]]) -> str:
    """The ``step``-th gaming candidate: vanilla CFR, except on arrays of the given
    ``shapes`` (the dev games': it games the dev split; every game's: the control)."""
    regrets, average = GAMING_RULES[step]
    source = cfr_parent().replace("import numpy as np\n",
                                  f"import numpy as np\n\nSPECIAL_SHAPES = {sorted(shapes)!r}\n"
                                  .replace("[", "{").replace("]", "}"), 1)
    source = source.replace("    regret = cum_regret + inst_regret\n",
                            regrets + "    regret = cum_regret + inst_regret\n", 1)
    return source.replace("    weight = 1.0\n", average + "    weight = 1.0\n", 1)


__all__ = ["FLAKE", "GAMING_RULES", "NOISY_HARNESS", "NoisyWorldsTask", "check", "cfr_parent",
           "class_path", "gaming_hooks", "player_shapes", "plants"]
