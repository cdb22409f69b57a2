"""Building a model's prompt from a proposal context, with templates users can override.

The templates are ``string.Template`` files (``$name`` placeholders, so code braces need no
escaping): ``system.md`` and ``user.md`` in ``templates/`` beside this module. A campaign's
``templates_dir`` may hold either file to replace the built-in one. The context holds dev
metrics only: held-out results never reach a prompt.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path

from recursor.errors import ConfigError
from recursor.proposers._base import NodeView, ProposalContext

BUILTIN_TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAMES = ("system.md", "user.md")
FAILURE_CHARS = 1500
FILE_CHARS = 12_000
MAX_FAILURES = 3
MAX_TRIED = 12


def load_templates(templates_dir: Path | None) -> dict[str, string.Template]:
    """The two templates, each from ``templates_dir`` when it has one, else built in."""
    if templates_dir is not None and not templates_dir.is_dir():
        raise ConfigError(f"templates_dir {templates_dir} is not a directory")
    templates = {}
    for name in TEMPLATE_NAMES:
        custom = templates_dir / name if templates_dir is not None else None
        path = custom if custom is not None and custom.is_file() else BUILTIN_TEMPLATES / name
        templates[name] = string.Template(path.read_text())
    return templates


PLACEHOLDERS = frozenset({
    "task_name", "task_description", "objective_metric", "objective_direction",
    "allowed_kinds", "parent_id", "parent_metrics", "parent_delta", "parent_files",
    "inspirations", "failures", "tried", "editable_paths"})


def check_templates(templates: Mapping[str, string.Template]) -> None:
    """ConfigError when a template names a placeholder that does not exist."""
    for name, template in templates.items():
        unknown = set(template.get_identifiers()) - PLACEHOLDERS
        if unknown or not template.is_valid():
            raise ConfigError(f"prompt template {name} uses an unknown placeholder: "
                              f"{', '.join(sorted(unknown)) or 'a malformed $'}; known: "
                              f"{', '.join(sorted(PLACEHOLDERS))}")


def build_messages(context: ProposalContext,
                   templates: Mapping[str, string.Template]) -> list[dict[str, str]]:
    """System and user messages for one proposal."""
    values = prompt_values(context)
    try:
        system = templates["system.md"].substitute(values)
        user = templates["user.md"].substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"prompt template uses an unknown placeholder: {exc}; known: "
                          f"{', '.join(sorted(values))}") from exc
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def prompt_values(context: ProposalContext) -> dict[str, str]:
    parent = context.parent
    kinds = ", ".join(k.value for k in context.allowed_kinds) or "algorithm"
    return {
        "task_name": context.task_name,
        "task_description": context.task_description.strip(),
        "objective_metric": context.objective_metric,
        "objective_direction": context.objective_direction,
        "allowed_kinds": kinds,
        "parent_id": parent.id,
        "parent_metrics": _metrics(parent.metrics) or "not evaluated",
        "parent_delta": _delta(parent, context.history),
        "parent_files": _files(parent.files, context.editable_paths),
        "inspirations": _inspirations(context.inspirations, context.editable_paths),
        "failures": _failures(context.recent_failures),
        "tried": _tried(context.history),
        "editable_paths": ", ".join(context.editable_paths),
    }


def _metrics(metrics: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={value:.6g}" for name, value in sorted(metrics.items()))


def _delta(node: NodeView, history: Sequence[NodeView]) -> str:
    """How the node's metrics moved from its own parent's, when both are known."""
    grandparent = next((n for n in history if n.id == node.parent_id), None)
    if grandparent is None or not grandparent.metrics:
        return ""
    moves = [f"{name} {value - grandparent.metrics[name]:+.4g}"
             for name, value in sorted(node.metrics.items()) if name in grandparent.metrics]
    return f"Change from its parent: {', '.join(moves)}" if moves else ""


def _files(files: Mapping[str, str], editable: Sequence[str]) -> str:
    shown = [path for path in editable if path in files] or sorted(files)
    blocks = []
    for path in shown:
        text = files[path]
        if len(text) > FILE_CHARS:
            text = text[:FILE_CHARS] + "\n... (truncated)\n"
        tag = "editable" if path in editable else "read-only"
        blocks.append(f"{path} ({tag}):\n```python\n{text.rstrip()}\n```")
    return "\n\n".join(blocks) or "(no files)"


def _inspirations(nodes: Sequence[NodeView], editable: Sequence[str]) -> str:
    if not nodes:
        return "(none yet)"
    parts = []
    for node in nodes:
        head = f"### Node {node.id}: {node.rationale or node.proposer} ({_metrics(node.metrics)})"
        parts.append(f"{head}\n\n{_files(node.files, editable)}")
    return "\n\n".join(parts)


def _failures(nodes: Sequence[NodeView]) -> str:
    if not nodes:
        return "(none)"
    parts = []
    for node in list(nodes)[:MAX_FAILURES]:  # the context lists the newest first
        error = (node.error or "failed").strip()
        if len(error) > FAILURE_CHARS:
            error = "... " + error[-FAILURE_CHARS:]
        parts.append(f"- {node.rationale or node.proposer}:\n```\n{error}\n```")
    return "\n".join(parts)


def _tried(history: Sequence[NodeView]) -> str:
    recent = [n for n in history if n.rationale][-MAX_TRIED:]
    if not recent:
        return "(nothing yet)"
    lines = []
    for node in recent:
        outcome = f"score {node.score:.6g}" if node.score is not None else node.status.value
        lines.append(f"- {node.rationale[:160]} -> {outcome}")
    return "\n".join(lines)


__all__ = ["PLACEHOLDERS", "build_messages", "check_templates", "load_templates",
           "prompt_values"]
