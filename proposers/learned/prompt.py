"""The prompt a proposer model trained on an archive reads, and where its answer ends.

One rendering serves both sides: ``recursor archive export --format sft`` writes each parent
this way for training (:mod:`recursor.orchestrator.proposer_data`), and the ``learned``
proposer renders the parent it is asked about the same way, so the model sees at proposal time
exactly the shape it was trained on. The rendering is compact, for a small model with a short
context: the objective, the parent's dev score, each file's marked (EVOLVE) regions (the only
lines a proposal may change) and the outcome the change had (training) or should have (asking).
"""

from __future__ import annotations

from collections.abc import Mapping

BLOCK_START, BLOCK_END = "EVOLVE-BLOCK-START", "EVOLVE-BLOCK-END"
END = "### end"  # closes every completion: where a trained model learns to stop
IMPROVED, NOT_IMPROVED = "improved", "not improved"


def render_parent(files: Mapping[str, str], score: float | None, metric: str,
                  direction: str, numbered: bool = False, outcome: str = IMPROVED) -> str:
    """The prompt: the objective, the parent's dev score, each marked region with its file,
    and the change's outcome.

    ``numbered`` prefixes each region line with its line number in the file (``12|``), which
    the operator language (:mod:`recursor.proposers.learned.ops`) names sites by.
    ``outcome`` conditions the model on the result: a training row says whether its change
    improved on the parent (:data:`IMPROVED` or :data:`NOT_IMPROVED`), so the model learns
    from every evaluated change, and the proposer asks for an :data:`IMPROVED` one."""
    shown = "none" if score is None else f"{score:.6g}"
    lines = [f"# objective: {metric} ({direction})", f"# parent dev score: {shown}"]
    for path in sorted(files):
        regions = numbered_regions(files[path])
        if regions:
            lines.append(f"FILE {path}")
            for region in regions:
                lines += [f"{number}|{line}" if numbered else line for number, line in region]
                lines.append("...")
            lines.pop()
    return "\n".join(lines) + f"\n# outcome: {outcome}\n# edit:\n"


def numbered_regions(text: str) -> list[list[tuple[int, str]]]:
    """The (1-based line number, line) pairs of each EVOLVE block, markers included."""
    regions: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        if BLOCK_START in line:
            current = [(number, line)]
        elif current is not None:
            current.append((number, line))
            if BLOCK_END in line:
                regions.append(current)
                current = None
    return regions


def marked_regions(text: str) -> list[list[str]]:
    """The lines of each EVOLVE block (markers included), in order."""
    return [[line for _, line in region] for region in numbered_regions(text)]


__all__ = ["END", "IMPROVED", "NOT_IMPROVED", "marked_regions", "numbered_regions",
           "render_parent"]
