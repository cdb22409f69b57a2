"""Held-out success of base, harness-only, policy-only and joint campaigns on ``worlds``.

Every arm starts from the same system (the seed harness and the starting policy trained under
it) and gets the same evaluation budget (candidates evaluated, trained policies included); each
arm is a fresh campaign. Prints one table row per arm.

    .venv/bin/python experiments/coevolution.py [--evals 6] [--steps 300] [--dir DIR]
        [--world-seed N]   # default: a private random seed
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _campaigns import campaign, pct, private_seed, run, seed_note, worlds_task  # noqa: E402


def arms(evals: int) -> dict[str, tuple[list[dict[str, object]], int]]:
    """Each arm's schedule and cycles; every arm evaluates ``evals`` candidates."""
    cycles = 2 if evals >= 4 else 1
    harness = max(1, evals // cycles - 1)
    policy = evals // cycles - harness
    joint = [{"step": "harness", "evals": harness}, {"step": "policy", "evals": policy}]
    adapted = [{"step": "harness", "evals": harness, "adapt": True},
               {"step": "policy", "evals": policy}]
    return {
        "harness-only": ([{"step": "harness", "evals": evals}], 1),
        "policy-only": ([{"step": "policy", "evals": evals}], 1),
        "joint": (joint, cycles),  # harness steps judge under the fixed incumbent policy
        "joint-adapted": (adapted, cycles),  # ... under a policy retrained per candidate
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=6, help="candidates per campaign")
    parser.add_argument("--steps", type=int, default=300, help="SFT steps per policy")
    parser.add_argument("--world-seed", type=int, default=None,
                        help="default: random and not shown (held-out stays private)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="recursor-coevolution-"))
    # one seed for every arm, so they compare on the same universes
    task = worlds_task(private_seed(args.world_seed), args.steps)
    rows = []
    for name, (steps, cycles) in arms(args.evals).items():
        started = time.monotonic()
        config = campaign(f"exp-{name}", task, steps, cycles, args.seed, base / "jobs")
        result = run(config, base / name)
        result["minutes"] = (time.monotonic() - started) / 60
        rows.append((name, result))
        print(f"# {name}: done in {result['minutes']:.1f} min ({base / name})", flush=True)
    start = rows[0][1]
    print(f"\nworlds, held-out universes: 3 x 24 questions; budget {args.evals} candidates per "
          f"campaign; SFT {args.steps} steps; {seed_note(args.world_seed)}\n")
    print("| arm | evaluated | promotions | dev success | held-out success | minutes |")
    print("|---|---|---|---|---|---|")
    print(f"| base (start) | 0 | - | {pct(start['start_dev'])} | "
          f"{pct(start['start_heldout'])} | - |")
    for name, r in rows:
        promos = ", ".join(f"{k} {v}" for k, v in sorted(r["promotions"].items())) or "none"
        print(f"| {name} | {r['evaluated']} | {promos} | {pct(r['dev'])} | {pct(r['heldout'])} "
              f"| {r['minutes']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
