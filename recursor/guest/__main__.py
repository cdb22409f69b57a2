"""``python -P -s -m recursor.guest MODULE [ARG ...]``: run a trusted module sealed.

Every command a task plans with ``recursor.plan.trusted_module_command`` starts here: the
process first becomes unable to start programs (:func:`recursor.guest.deny_exec`, a seccomp
filter no child can lift), then runs ``MODULE`` as ``__main__`` in this same process. So no
evaluator, the user's or a task's, can run a candidate beside its own secrets, even one that
forgets to seal itself: a candidate runs only where ``recursor.guest.run_candidate`` puts it.
Standard library only.
"""

from __future__ import annotations

import runpy
import sys

from recursor.guest import deny_exec


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -P -s -m recursor.guest MODULE [ARG ...]")
    module = sys.argv[1]
    del sys.argv[0]  # runpy puts the module's own path in argv[0]
    deny_exec()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
