"""Building a model's prompt from a proposal context, with templates users can override.

The templates are ``string.Template`` files (``$name`` placeholders, so code braces need no
escaping): ``system.md`` and ``user.md`` in ``templates/`` beside this module. A campaign's
``templates_dir`` may hold either file to replace the built-in one. The context holds dev
metrics only: held-out results never reach a prompt.

Untrusted data: program files, error text and rationales come from candidates (or from a model
that read them), so a failure's error can say "ignore previous instructions". Each such block is
fenced by :func:`fence` between ``<<<DATA <id> ...>>>`` and ``<<<END DATA <id>>>>`` lines, where
``<id>`` is a random nonce drawn for each prompt after the candidate text exists (and checked to
appear in none of it), so no candidate can write the closing line. Every block is cut to a
stated bound. The built-in system prompt tells the model that fenced blocks are data, never
instructions; a custom ``system.md`` should say the same (``$data_fence`` is the id).
"""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from recursor.errors import ConfigError
from recursor.proposers._base import NodeView, ProposalContext, find_node, newest_nodes
from recursor.untrusted import for_terminal

BUILTIN_TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAMES = ("system.md", "user.md")
FAILURE_CHARS = 1500
FAILURE_BLOCK_CHARS = 2000  # the error's tail plus the one-line rationale
FILE_CHARS = 12_000
RATIONALE_CHARS = 200
FEEDBACK_CHARS = 3000
TRIED_CHARS = 160
MAX_FAILURES = 3
MAX_TRIED = 12
NONCE_BYTES = 8
_LOOKALIKE = re.compile(r"<(?=<<)")  # each "<" that starts a "<<<"


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
    "inspirations", "failures", "tried", "editable_paths", "data_fence", "parent_feedback"})


def check_templates(templates: Mapping[str, string.Template]) -> None:
    """ConfigError when a template names a placeholder that does not exist."""
    for name, template in templates.items():
        unknown = set(template.get_identifiers()) - PLACEHOLDERS
        if unknown or not template.is_valid():
            raise ConfigError(f"prompt template {name} uses an unknown placeholder: "
                              f"{', '.join(sorted(unknown)) or 'a malformed $'}; known: "
                              f"{', '.join(sorted(PLACEHOLDERS))}")


def build_messages(context: ProposalContext, templates: Mapping[str, string.Template],
                   nonce: str | None = None) -> list[dict[str, str]]:
    """System and user messages for one proposal.

    ``nonce``: the data fence id, for tests only (it must occur in no candidate text); by
    default a fresh one is drawn for every call.
    """
    values = prompt_values(context, nonce)
    try:
        system = templates["system.md"].substitute(values)
        user = templates["user.md"].substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"prompt template uses an unknown placeholder: {exc}; known: "
                          f"{', '.join(sorted(values))}") from exc
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def prompt_values(context: ProposalContext, nonce: str | None = None) -> dict[str, str]:
    """The placeholder values; every candidate-derived block is fenced with ``nonce``."""
    parent = context.parent
    kinds = ", ".join(k.value for k in context.allowed_kinds) or "algorithm"
    tried = _recently_tried(context.history)
    fence_id = nonce or fresh_nonce(_untrusted_texts(context, tried))
    return {
        "data_fence": fence_id,
        "task_name": context.task_name,
        "task_description": context.task_description.strip(),
        "objective_metric": context.objective_metric,
        "objective_direction": context.objective_direction,
        "allowed_kinds": kinds,
        "parent_id": parent.id,
        "parent_metrics": _metrics(parent.metrics) or "not evaluated",
        "parent_delta": _delta(parent, find_node(context.history, parent.parent_id)),
        "parent_files": _files(parent.files, context.editable_paths, fence_id),
        "parent_feedback": _feedback(parent, fence_id),
        "inspirations": _inspirations(context.inspirations, context.editable_paths, fence_id),
        "failures": _failures(context.recent_failures, fence_id),
        "tried": _tried(tried, fence_id),
        "editable_paths": ", ".join(context.editable_paths),
    }


def _metrics(metrics: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={value:.6g}" for name, value in sorted(metrics.items()))


def _delta(node: NodeView, grandparent: NodeView | None) -> str:
    """How the node's metrics moved from its own parent's (``grandparent``), when both are
    known."""
    if grandparent is None or not grandparent.metrics:
        return ""
    moves = [f"{name} {value - grandparent.metrics[name]:+.4g}"
             for name, value in sorted(node.metrics.items()) if name in grandparent.metrics]
    return f"Change from its parent: {', '.join(moves)}" if moves else ""


def fresh_nonce(untrusted: Iterable[str]) -> str:
    """A random fence id that occurs in none of ``untrusted`` (the texts it will fence)."""
    texts = list(untrusted)
    while True:
        nonce = secrets.token_hex(NONCE_BYTES)
        if not any(nonce in text for text in texts):
            return nonce


def fence(text: str, label: str, nonce: str, *, limit: int, keep_tail: bool = False,
          exact: bool = False) -> str:
    """``text`` as one block of untrusted data: bounded, between lines only ``nonce`` closes.

    At most ``limit`` characters are kept (the tail when ``keep_tail``, e.g. a traceback's end)
    and the header says so when cut. ``exact`` keeps the text byte for byte (program files, which
    a SEARCH block must match); otherwise control characters are escaped
    (:func:`recursor.untrusted.for_terminal`) and every run of three or more ``<`` is broken
    up (``< < <<``), so even a look-alike marker with a wrong id does not read as a fence line.
    """
    body = text if exact else _LOOKALIKE.sub("< ", for_terminal(text))
    note = ""
    if len(body) > limit:
        body = body[-limit:] if keep_tail else body[:limit]
        note = f", cut to its {'last' if keep_tail else 'first'} {limit} characters"
    else:
        note = f", at most {limit} characters"
    title = for_terminal(label, single_line=True, limit=200)
    return (f"<<<DATA {nonce} {title}{note}>>>\n{body.rstrip()}\n"
            f"<<<END DATA {nonce}>>>")


def _untrusted_texts(context: ProposalContext, tried: Sequence[NodeView]) -> Iterator[str]:
    """Every candidate-derived text a prompt shows (the nonce must occur in none of them)."""
    for node in (context.parent, *context.inspirations, *context.recent_failures):
        yield node.rationale or ""
        yield node.error or ""
        yield from node.artifacts
        yield from node.artifacts.values()
        yield from node.files
        yield from node.files.values()
    for node in tried:
        yield node.rationale or ""


def _files(files: Mapping[str, str], editable: Sequence[str], nonce: str) -> str:
    """Editable files under a ``path (editable):`` line (a path the campaign config named);
    any other file's name, which a candidate chose, stays inside its fence."""
    shown = [path for path in editable if path in files] or sorted(files)
    blocks = []
    for path in shown:
        if path in editable:
            blocks.append(f"{path} (editable):\n" + fence(
                files[path], f"file {path}", nonce, limit=FILE_CHARS, exact=True))
        else:
            blocks.append("read-only file:\n" + fence(
                f"path: {path}\n{files[path]}", "read-only file, its path first", nonce,
                limit=FILE_CHARS, exact=True))
    return "\n\n".join(blocks) or "(no files)"


def _inspirations(nodes: Sequence[NodeView], editable: Sequence[str], nonce: str) -> str:
    if not nodes:
        return "(none yet)"
    parts = []
    for node in nodes:
        why = fence(node.rationale or node.proposer, f"rationale of node {node.id}", nonce,
                    limit=RATIONALE_CHARS)
        parts.append(f"### Node {node.id} ({_metrics(node.metrics)})\n\n{why}\n\n"
                     f"{_files(node.files, editable, nonce)}")
    return "\n\n".join(parts)


def _failures(nodes: Sequence[NodeView], nonce: str) -> str:
    if not nodes:
        return "(none)"
    parts = []
    for node in list(nodes)[:MAX_FAILURES]:  # the context lists the newest first
        why = for_terminal(node.rationale or node.proposer, single_line=True,
                           limit=RATIONALE_CHARS)
        error = for_terminal((node.error or "failed").strip())
        if len(error) > FAILURE_CHARS:  # a traceback's end says the most
            error = "... " + error[-FAILURE_CHARS:]
        parts.append(f"- node {node.id}:\n" + fence(
            f"change: {why}\nerror:\n{error}",
            f"failure of node {node.id} (its change, then the end of its error)",
            nonce, limit=FAILURE_BLOCK_CHARS, keep_tail=True))
        if node.artifacts:
            parts.append(_feedback(node, nonce))
    return "\n".join(parts)


def _feedback(node: NodeView, nonce: str) -> str:
    """The evaluator's artifacts on ``node``'s dev run, as one fenced, bounded block (they may
    quote the candidate's output)."""
    if not node.artifacts:
        return "(none)"
    text = "\n".join(f"{name}:\n{value}" for name, value in sorted(node.artifacts.items()))
    return fence(text, f"the evaluator's feedback on node {node.id}", nonce,
                 limit=FEEDBACK_CHARS)


def _recently_tried(history: Sequence[NodeView]) -> list[NodeView]:
    """The ``MAX_TRIED`` newest nodes with a rationale, among twice as many newest ones (only
    the starting point has none): read without loading the whole history."""
    return [n for n in newest_nodes(history, 2 * MAX_TRIED) if n.rationale][-MAX_TRIED:]


def _tried(recent: Sequence[NodeView], nonce: str) -> str:
    if not recent:
        return "(nothing yet)"
    lines = []
    for node in recent:
        outcome = f"score {node.score:.6g}" if node.score is not None else node.status.value
        why = for_terminal(node.rationale, single_line=True, limit=TRIED_CHARS)
        lines.append(f"- {why} -> {outcome}")
    return fence("\n".join(lines), "changes already tried, one per line", nonce,
                 limit=MAX_TRIED * (TRIED_CHARS + 40))


__all__ = ["PLACEHOLDERS", "build_messages", "check_templates", "fence", "fresh_nonce",
           "load_templates", "prompt_values"]
