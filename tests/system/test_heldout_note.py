"""A program task whose evaluator takes no split says, in the summary, that its held-out row
repeats dev; one that takes a split says nothing of the kind."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.summary import render_summary

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"
NO_SPLIT = '''
def evaluate(path):
    return {"score": float(len(open(path).read()) % 7)}
'''


def _summary_text(tmp_path: Path, evaluator: Path) -> str:
    config = parse_config({
        "name": "note", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                 "evaluator": str(evaluator)},
        "proposers": [{"kind": "mutation"}], "budget": {"max_evals": 1}})
    summary = run_campaign(config, tmp_path / "c")
    console = Console(record=True, width=200)
    render_summary(summary, "score", console)
    return console.export_text()


def test_an_evaluator_without_a_split_is_said_to_hold_nothing_out(tmp_path: Path) -> None:
    evaluator = tmp_path / "evaluate.py"
    evaluator.write_text(NO_SPLIT)
    text = _summary_text(tmp_path, evaluator)
    assert "held-out: none: evaluate.py's evaluate() takes no split keyword" in text, text


def test_an_evaluator_with_a_split_gets_no_note(tmp_path: Path) -> None:
    assert "held-out: none" not in _summary_text(tmp_path, EXAMPLE / "evaluate.py")
