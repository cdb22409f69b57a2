"""Run other systems' example problems through Recursor's front door, unchanged.

Give it a checkout of OpenEvolve's or ShinkaEvolve's repository (or any folder): every folder
below ``examples/`` that holds a Python program (``initial_program.py`` or ``initial.py``) and
an evaluator (``evaluator.py`` or ``evaluate.py``) is run as a user would run it::

    recursor run --program DIR/initial_program.py --evaluator DIR/evaluator.py \\
        --dir OUT/NAME --max-evals N -q

with the offline proposers and nothing added, and one line per example says whether it ran
(the summary's dev row: metric, start, best) or how it stopped (the error). Example::

    .venv/bin/python experiments/peer_examples.py ~/src/openevolve --max-evals 3

Nothing of the examples is copied into this repository; their code runs only in the
sandboxes, as any user's would.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAMS = ("initial_program.py", "initial.py")
EVALUATORS = ("evaluator.py", "evaluate.py")


def examples(root: Path) -> list[tuple[Path, Path]]:
    """(program, evaluator) of each example folder under ``root/examples`` (sorted)."""
    found = []
    for folder in sorted(p for p in (root / "examples").rglob("*") if p.is_dir()):
        program = next((folder / n for n in PROGRAMS if (folder / n).is_file()), None)
        evaluator = next((folder / n for n in EVALUATORS if (folder / n).is_file()), None)
        if program is not None and evaluator is not None:
            found.append((program, evaluator))
    return found


def outcome(done: subprocess.CompletedProcess[str]) -> str:
    """One line: the summary's dev row (metric, start, best) of a campaign that ran, else the
    error's first sentence."""
    if done.returncode == 0:
        dev = next((" ".join(line.split()) for line in done.stdout.splitlines()
                    if line.startswith("dev ")), "")
        return f"ran: {dev}" if dev else "ran"
    lines = " ".join(done.stderr.split()).split("; its logs")[0]
    return f"stopped ({done.returncode}): {lines[:240]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repository", type=Path, help="a checkout with an examples/ folder")
    parser.add_argument("--max-evals", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per example")
    parser.add_argument("--out", type=Path, default=None, help="campaign folders (default: "
                        "a temporary folder)")
    args = parser.parse_args()
    found = examples(args.repository)
    if not found:
        print(f"no examples under {args.repository / 'examples'}", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="peer-examples-"))
    ran = 0
    for program, evaluator in found:
        name = str(program.parent.relative_to(args.repository / "examples")).replace("/", "_")
        command = [sys.executable, "-m", "recursor.cli", "run", "--program", str(program),
                   "--evaluator", str(evaluator), "--dir", str(out / name), "--max-evals",
                   str(args.max_evals), "-q"]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=args.timeout)
            line = outcome(done)
        except subprocess.TimeoutExpired:
            line = f"stopped: over {args.timeout:g} s"
        ran += line.startswith("ran")
        print(f"{name:<60} {line}", flush=True)
    print(f"\n{ran} of {len(found)} ran; campaigns in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
