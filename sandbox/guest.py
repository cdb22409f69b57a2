"""The in-sandbox helpers for evaluators, kept at the path task authors know; they live in the
core (:mod:`recursor.guest`) because tasks run them and tasks never import a sandbox."""

from recursor.guest import *  # noqa: F403
from recursor.guest import __all__  # noqa: F401
