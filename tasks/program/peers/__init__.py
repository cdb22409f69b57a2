"""Shims for evaluators written to other systems' conventions (see README.md); this folder,
not the package, goes on the runner's import path."""
