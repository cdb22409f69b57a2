"""File names shared by the task (host side) and its evaluator (sandbox side)."""

HOOK_FILE = "cfr_hooks.py"  # the candidate's hook module, at the workspace root
ERROR_FILE = "error.txt"  # where the solver child explains why it failed
