"""Baseline meta-strategy solvers, each a complete candidate ``meta_solver.py``: ``uniform`` (the
seed: fictitious play), ``nash`` (a linear program), ``prd`` (projected replicator dynamics) and
``regret_matching``. They are data for the evaluator's child process, not imported by the task."""
