"""What the front door says about a user's evaluator: one that takes no split is said, in the
summary, to hold nothing out (one that takes a split is not); one that returns OpenEvolve's
``combined_score`` and no ``score`` is optimized on ``combined_score``, and the choice is said
at the start."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import Reporter
from recursor.orchestrator.summary import render_summary

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"
NO_SPLIT = '''
def evaluate(path):
    return {"score": float(len(open(path).read()) % 7)}
'''


class Messages(Reporter):
    def __init__(self) -> None:
        self.said: list[str] = []

    def message(self, text: str) -> None:
        self.said.append(text)


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


COMBINED = '''
def evaluate(path, split="dev"):
    size = len(open(path).read())
    return {"combined_score": 1.0 / (1 + size % 13), "size": float(size)}
'''


def test_an_openevolve_style_evaluator_is_optimized_on_combined_score(tmp_path: Path) -> None:
    evaluator = tmp_path / "evaluator.py"
    evaluator.write_text(COMBINED)
    said = Messages()
    config = parse_config({
        "name": "peer", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                 "evaluator": str(evaluator)},
        "proposers": [{"kind": "mutation"}], "budget": {"max_evals": 2}})
    summary = run_campaign(config, tmp_path / "c", said)
    assert any(m.startswith("task.metric: evaluator.py returns no 'score' metric but "
                            "'combined_score'") for m in said.said), said.said
    assert summary.evaluated == 2 and summary.failed == 0  # scored on combined_score
    assert "score" not in summary.root.dev["metrics"]
    console = Console(record=True, width=200)
    render_summary(summary, "combined_score", console)
    assert "dev combined_score" in console.export_text()
