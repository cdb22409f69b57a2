"""The prompt a proposer model trained on an archive reads, and where its answer ends.

One rendering serves both sides: ``recursor archive export --format sft`` writes each parent
this way for training (:mod:`recursor.orchestrator.proposer_data`), and the ``learned``
proposer renders the parent it is asked about the same way, so the model sees at proposal time
exactly the shape it was trained on. The rendering is compact, for a small model with a short
context: the objective, the parent's dev score, and each file's marked (EVOLVE) regions, the
only lines a proposal may change.
"""

from __future__ import annotations

from collections.abc import Mapping

BLOCK_START, BLOCK_END = "EVOLVE-BLOCK-START", "EVOLVE-BLOCK-END"
END = "### end"  # closes every completion: where a trained model learns to stop


def render_parent(files: Mapping[str, str], score: float | None, metric: str,
                  direction: str) -> str:
    """The prompt: the objective, the parent's dev score, each marked region with its file."""
    shown = "none" if score is None else f"{score:.6g}"
    lines = [f"# objective: {metric} ({direction})", f"# parent dev score: {shown}"]
    for path in sorted(files):
        regions = marked_regions(files[path])
        if regions:
            lines.append(f"FILE {path}")
            lines += [line for region in regions for line in (*region, "...")][:-1]
    return "\n".join(lines) + "\n# edit:\n"


def marked_regions(text: str) -> list[list[str]]:
    """The lines of each EVOLVE block (markers included), in order."""
    regions: list[list[str]] = []
    current: list[str] | None = None
    for line in text.split("\n"):
        if BLOCK_START in line:
            current = [line]
        elif current is not None:
            current.append(line)
            if BLOCK_END in line:
                regions.append(current)
                current = None
    return regions


__all__ = ["END", "marked_regions", "render_parent"]
