"""File names shared by the task (host side) and its evaluator (sandbox side)."""

HOOK_FILE = "cfr_hooks.py"  # the candidate's hook module, at the workspace root

# A game solved to within 0.002 chips (the ante of these games is 1) counts as solved: its
# log10 stops there. Without a floor one game converging toward 0 decides the mean of log10s
# (Kuhn poker reaches 4e-6 under optimistic variants, -5.4 against Leduc's -1.9), and the
# search trades Leduc for Kuhn. It also keeps an exact 0 (log10 = -inf) finite.
EXPLOITABILITY_FLOOR = 2e-3
