"""Provenance-matched vs pooled training corpora at equal size, on ``worlds``.

The adopted harness is the seed harness with a menu of actions and the next-relation hint; the
other is the seed harness. Both render the solver's trajectories on the same training tasks.
A policy is trained on each corpus (same SFT settings, same seed) and evaluated under the
adopted harness on the dev and held-out universes:

- matched: N rows rendered under the adopted harness;
- pooled: N rows, half rendered under each harness;
- pooled x2: all 2N rows of both (a larger pooled corpus).

Over ``--seeds`` private world seeds (5 by default) it prints each arm's mean held-out success
with a 95% interval (Student's t) and the paired difference matched minus pooled.

    .venv/bin/python experiments/provenance.py [--seeds 5] [--steps 300] [--dir DIR]
        [--world-seed N]   # one given world seed instead
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import secrets
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobSpec
from recursor.orchestrator.coevolution import stamp
from recursor.stats import t_interval as interval
from recursor.tasks.worlds import POLICY_DEFAULTS, SEED_DIR, world
from recursor.tasks.worlds.evaluate import component_ids, corpus, evaluate
from recursor.tasks.worlds.policy import Policy

ADOPTED = {"MENU": "True", "SHOW_NEXT": "True"}



def workspace(settings: dict[str, str], policy: str = "none") -> dict[str, str]:
    files = {}
    for name in ("harness.py", "recipe.py", "curriculum.py"):
        text = (SEED_DIR / name).read_text()
        for key, value in settings.items():
            text = re.sub(rf"^{key} = \S+", f"{key} = {value}", text, flags=re.M)
        files[name] = text
    files["policy.json"] = json.dumps({"policy": policy})
    return files


def train(rows: list[dict[str, Any]], base: Path, name: str, steps: int) -> str:
    data = base / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"prompt": r["prompt"], "completion": r["completion"]})
                            + "\n" for r in rows))
    spec = JobSpec(kind="sft", model="tiny-gpt2", data=str(data), seed=0,
                   model_options=POLICY_DEFAULTS["model_options"],
                   config={**POLICY_DEFAULTS["sft"], "max_steps": steps})
    executor = LocalExecutor(base / "jobs")
    record = executor.wait(executor.submit(spec))
    if record.status.value != "done":
        raise SystemExit(f"training {name} failed: {record.error}")
    target = base / "policies" / record.job_id
    if not target.exists():
        shutil.copytree(record.artifacts["checkpoint"], target)
    return str(record.job_id)


def one_seed(seed: int, steps: int, base: Path) -> dict[str, dict[str, float]]:
    """{arm: {"dev", "heldout", "rows", "harnesses"}} on one world seed."""
    (base / "policies").mkdir(parents=True, exist_ok=True)
    universes = {split: world.split_universes(split, count, 24, seed)
                 for split, count in (("train", 10), ("dev", 3), ("heldout", 3))}
    cycle = 2  # every hop count
    adopted_files, other_files = workspace(ADOPTED), workspace({})
    adopted = stamp(component_ids(adopted_files),
                    corpus(adopted_files, universes["train"], None, cycle, 0), "none")
    other = stamp(component_ids(other_files),
                  corpus(other_files, universes["train"], None, cycle, 0), "none")
    rng = random.Random(0)
    n = len(adopted)
    arms = {"matched": adopted,
            "pooled": rng.sample(adopted, n // 2) + rng.sample(other, n - n // 2),
            "pooled x2": adopted + other}
    out = {}
    for name, rows in arms.items():
        policy = train(rows, base, name.replace(" ", ""), steps)
        complete = Policy(base / "policies" / policy).complete
        scores = {s: evaluate(workspace(ADOPTED, policy), universes[s], complete)["metrics"]
                  ["success"] for s in ("dev", "heldout")}
        out[name] = {**scores, "rows": float(len(rows)),
                     "harnesses": float(len({r["provenance"]["harness"] for r in rows}))}
        print(f"# {name}: dev {100 * scores['dev']:.1f}%, held-out "
              f"{100 * scores['heldout']:.1f}%", flush=True)
    return out


def _fmt(values: list[float]) -> str:
    mean, half = interval(values)
    return f"{100 * mean:.1f}%" + ("" if math.isnan(half) else f" ± {100 * half:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="private world seeds drawn")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--world-seed", type=int, default=None,
                        help="one given world seed (default: --seeds private random ones)")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    # the workspaces here are the project's own seed files, not candidates: their children may
    # run as host processes (a campaign runs them in sandboxes of their own)
    os.environ.setdefault("RECURSOR_HOST_EVALUATOR", "1")
    base = args.dir or Path(tempfile.mkdtemp(prefix="recursor-provenance-"))
    seeds = [args.world_seed] if args.world_seed is not None else [
        secrets.randbits(62) for _ in range(args.seeds)]
    results = [one_seed(seed, args.steps, base / f"seed-{i}") for i, seed in enumerate(seeds)]
    print(f"\n{len(results)} world seeds (private); SFT {args.steps} steps; each policy "
          "evaluated under the adopted harness\n")
    print("| corpus | rows | harnesses | dev success | held-out success (mean ± 95% CI) |")
    print("|---|---|---|---|---|")
    for name in results[0]:
        rows = statistics.fmean(r[name]["rows"] for r in results)
        print(f"| {name} | {rows:.0f} | {results[0][name]['harnesses']:.0f} | "
              f"{_fmt([r[name]['dev'] for r in results])} | "
              f"{_fmt([r[name]['heldout'] for r in results])} |")
    for split in ("dev", "heldout"):
        diffs = [r["matched"][split] - r["pooled"][split] for r in results]
        mean, half = interval(diffs)
        print(f"matched minus pooled at equal size, {split}: {100 * mean:+.1f} points"
              + ("" if math.isnan(half) else f" ± {100 * half:.1f} (95% CI, paired)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
