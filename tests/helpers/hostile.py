"""Hostile display text: terminal escapes, rich markup and bidi controls, as candidates write it.

``HostileTextProposer`` is a proposer plug-in that puts :data:`HOSTILE` everywhere a candidate
can: the rationale, a comment in the code (so the patch holds it), the program's stdout and
stderr, and the message of an exception its hook raises (so the node's error holds it).
"""

from __future__ import annotations

from typing import Any

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind
from tests.helpers.scripted import VANILLA_TAIL_FAILS

OSC52_CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"  # writes "rm -rf ~" to the operator's clipboard
OSC0_TITLE = "\x1b]0;owned-title\x07"
CLEAR_SCREEN = "\x1b[2J"
FAKE_STATUS = "\x1b[1A\x1b[2Kstatus ok"  # up one line, erase it, paint a fake verdict
MARKUP = "[link=https://evil.example/x]click[/link][/bold]"  # the stray close crashes rich
BIDI = "\u202eevil\u2066"  # right-to-left override, left-to-right isolate (Trojan Source)
DCS_AND_C1 = "\x1bP+q544e\x1b\\\x9b2J\x85"  # DCS query, 8-bit CSI, NEL

# One line (a progress line keeps only the first), the dangerous parts first.
HOSTILE = OSC52_CLIPBOARD + OSC0_TITLE + CLEAR_SCREEN + FAKE_STATUS + " " + MARKUP + " " \
    + BIDI + DCS_AND_C1 + " end"

# What must never reach a terminal raw (the byte that starts a sequence, and the bidi controls).
RAW_FORBIDDEN = ("\x1b]", "\x1bP", "\x1b[2J", "\x1b[1A", "\x07", "\x9b", "\x85", "\u202e",
                 "\u2066")
# What the operator must still see, escaped (every payload in visible form).
VISIBLE = ("\\x1b]52;c;cm0gLXJmIH4K\\x07", "\\x1b]0;owned-title\\x07", "\\x1b[2J",
           "\\x1b[1A\\x1b[2Kstatus ok", MARKUP, "\\u202eevil\\u2066", "\\x9b2J")

_PRINT = (f"import sys\nsys.stdout.write({HOSTILE!r} + '\\n')\n"
          f"sys.stderr.write({HOSTILE!r} + '\\n')\n")


def loud_hook(fail: bool) -> str:
    """A CFR+ hook file that prints HOSTILE when imported and has it in a comment; with
    ``fail``, its regret update raises an exception carrying HOSTILE after the quick check."""
    action = f"raise ValueError({HOSTILE!r})" if fail else "pass"
    source = VANILLA_TAIL_FAILS.replace("{action}", action)
    return f"# {HOSTILE}\n{_PRINT}{source}"


class HostileTextProposer(Proposer):
    """Alternates a failing and a working loud hook, each with HOSTILE as its rationale."""

    name = "hostile"

    def __init__(self, **_: Any) -> None:
        self.calls = 0

    def propose(self, context: ProposalContext) -> Proposal:
        step = sum(1 for v in context.history if v.proposer == self.name)
        self.calls += 1
        return Proposal(kind=ChangeKind.ALGORITHM, rationale=HOSTILE,
                        files={context.editable_paths[0]: loud_hook(fail=step % 2 == 0)})
