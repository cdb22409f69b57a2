"""Held-out success of base, harness-only, policy-only, joint and joint-with-challenger
campaigns on ``worlds``, over several private world seeds, with confidence intervals.

Per world seed, every arm starts from the same system (the seed harness and the starting policy
trained under it: one shared job) and gets the same budget of candidates (trained policies
included); each arm is a fresh campaign. The challenger is off (``task.challenger_target:
null``) in every arm but the last. Per arm it prints the mean held-out success over the seeds
with a 95% interval (Student's t), then the paired differences against the joint arm with the
challenger, and the joint-minus-sum gain ``(joint - base) - (harness-only - base) -
(policy-only - base)``, each with its interval over the seeds (paired: same universes).

    .venv/bin/python experiments/coevolution.py [--seeds 5] [--evals 6] [--steps 300]
        [--dir DIR] [--world-seed N]   # one given world seed instead of --seeds private ones

A sweep takes hours. Run it again with the same ``--dir`` to continue: the drawn seeds are kept
there (``seeds.json``, the experimenter's folder, which no sandbox sees), an arm that finished
is read back from its ``result.json``, and an interrupted arm's campaign is resumed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _campaigns import (  # noqa: E402
    campaign,
    corpora_in,
    pct,
    private_seed,
    run,
    worlds_task,
)

from recursor.stats import t_interval as interval  # noqa: E402

CHALLENGED = "joint+challenger"


def arms(evals: int) -> dict[str, tuple[list[dict[str, object]], int, bool]]:
    """Each arm's schedule, cycles and whether its challenger is on; ``evals`` candidates."""
    cycles = 2 if evals >= 4 else 1
    per_cycle = max(2, evals // cycles)
    harness = max(1, per_cycle // 2)
    adapted = [{"step": "search", "components": ["harness"], "evals": harness, "adapt": True},
               {"step": "train", "evals": per_cycle - harness}]
    challenged = [{"step": "search", "components": ["harness"], "evals": harness,
                   "adapt": True},
                  {"step": "search", "components": ["curriculum", "challenger"],
                   "evals": per_cycle - harness, "adapt": True}]
    return {
        "harness-only": ([{"step": "search", "components": ["harness"], "evals": evals,
                           "adapt": False}], 1, False),
        "policy-only": ([{"step": "train", "evals": evals}], 1, False),
        "joint": (adapted, cycles, False),  # harness judged under a policy retrained for it
        CHALLENGED: (challenged, cycles, True),
    }


def one_seed(world_seed: int, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Every arm on one world seed: {arm: run result}, plus "base"."""
    out: dict[str, Any] = {}
    for name, (steps, cycles, challenger) in arms(args.evals).items():
        saved = base / name / "result.json"
        if saved.exists():
            out[name] = json.loads(saved.read_text())
            if "corpora" not in out[name]:  # saved before the experiment kept them
                out[name]["corpora"] = corpora_in(base / name)
            print(f"# {name}: held-out {pct(out[name]['heldout'])} (done before)", flush=True)
            continue
        task = worlds_task(world_seed, args.steps)
        task["challenger_target"] = 0.5 if challenger else None
        started = time.monotonic()
        config = campaign(f"exp-{name}", task, steps, cycles, args.seed, base / "jobs")
        config["components"] = [*config["components"], "challenger"]
        result = run(config, base / name)
        result["minutes"] = (time.monotonic() - started) / 60
        saved.write_text(json.dumps(result, indent=1) + "\n")
        out[name] = result
        print(f"# {name}: held-out {pct(result['heldout'])} in {result['minutes']:.1f} min "
              f"({base / name})", flush=True)
    first = next(iter(out.values()))
    out["base"] = {"heldout": first["start_heldout"], "dev": first["start_dev"]}
    return out


def _fmt(values: list[float]) -> str:
    mean, half = interval(values)
    return f"{100 * mean:+.1f} ± {100 * half:.1f}" if not math.isnan(half) \
        else f"{100 * mean:+.1f}"


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    names = ["base", *arms(args.evals)]
    print(f"\nworlds, held-out: 3 universes x 24 questions; {len(results)} world seeds (private); "
          f"{args.evals} candidates per campaign; SFT {args.steps} steps\n")
    print("| arm | held-out success (mean ± 95% CI) | per seed | promotions (seeds with one) |")
    print("|---|---|---|---|")
    for name in names:
        values = [r[name]["heldout"] or 0.0 for r in results]
        mean, half = interval(values)
        shown = f"{100 * mean:.1f}%" + ("" if math.isnan(half) else f" ± {100 * half:.1f}")
        seeds = " ".join(pct(v) for v in values)
        promoted = sum(1 for r in results if r[name].get("promotions"))
        print(f"| {name} | {shown} | {seeds} | {'-' if name == 'base' else promoted} |")
    print(f"\npaired differences, {CHALLENGED} minus each arm (points, mean ± 95% CI):")
    for name in names[:-1]:
        diffs = [(r[CHALLENGED]["heldout"] or 0.0) - (r[name]["heldout"] or 0.0)
                 for r in results]
        print(f"  vs {name}: {_fmt(diffs)}")
    gains = []
    for r in results:
        b = r["base"]["heldout"] or 0.0
        for joint in ("joint", CHALLENGED):
            r.setdefault("_gain", {})[joint] = ((r[joint]["heldout"] or 0.0) - b) - (
                (r["harness-only"]["heldout"] or 0.0) - b) - (
                (r["policy-only"]["heldout"] or 0.0) - b)
        gains.append(r["_gain"])
    for joint in ("joint", CHALLENGED):
        print(f"joint-minus-sum gain ({joint}): {_fmt([g[joint] for g in gains])} points")
    frontier(results)


def frontier(results: list[dict[str, Any]]) -> None:
    """The challenger's band: per seed, the policy's success on the challenger's questions in
    each corpus run of the challenged arm, beside its success on every question probed then
    (the training universes' own and the challenger's)."""
    print(f"\n{CHALLENGED}: the policy's success on the challenger's questions (each corpus "
          "run; target 50%) | on every question probed (training universes)")
    for index, r in enumerate(results):
        corpora = r[CHALLENGED].get("corpora", [])
        asked = [c["challenger_success"] for c in corpora if "challenger_success" in c]
        probe = [c["success"] for c in corpora if "success" in c]
        print(f"  seed {index + 1}: {_span(asked)} | {_span(probe)}")


def _span(values: list[float]) -> str:
    return "-" if not values else (f"{100 * min(values):.1f}-{100 * max(values):.1f}% "
                                   f"({len(values)} runs)")


def drawn(base: Path, count: int) -> list[int]:
    """``count`` private world seeds: those an earlier run in ``base`` drew, then new ones."""
    kept = base / "seeds.json"
    seeds: list[int] = json.loads(kept.read_text()) if kept.exists() else []
    seeds += [private_seed(None) for _ in range(count - len(seeds))]
    base.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(seeds) + "\n")
    return seeds[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="private world seeds drawn")
    parser.add_argument("--evals", type=int, default=6, help="candidates per campaign")
    parser.add_argument("--steps", type=int, default=300, help="SFT steps per policy")
    parser.add_argument("--world-seed", type=int, default=None,
                        help="one given world seed (default: --seeds private random ones)")
    parser.add_argument("--seed", type=int, default=0, help="the campaigns' seed")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="recursor-coevolution-"))
    seeds = [args.world_seed] if args.world_seed is not None else drawn(base, args.seeds)
    results = []
    for index, world_seed in enumerate(seeds):
        print(f"# world seed {index + 1} of {len(seeds)}", flush=True)
        results.append(one_seed(world_seed, args, base / f"seed-{index}"))
    report(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
