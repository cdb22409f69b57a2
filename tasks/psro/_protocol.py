"""Names shared by the task (host side), its evaluator (trusted, in the sandbox) and the solver
child (which runs candidate code)."""

SOLVER_FILE = "meta_solver.py"  # the candidate's module, at the workspace root
SOLVER_FUNCTION = "meta_solver"  # meta_solver(payoffs, iteration) -> [mixture_0, mixture_1]
SOLVER_ARITY = 2
