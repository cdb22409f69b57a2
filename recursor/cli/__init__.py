"""The ``recursor`` command line (typer + rich): the front end over the library.

``main`` holds the root app and the run/resume commands; each other module is one command
group (``archive``, ``job``, ``plugins``, ``proposers``, ``replay``, ``sandbox``, ``ui``). The
console script is ``recursor.cli:main``; ``python -m recursor.cli`` runs the same.
"""

from recursor.cli.main import app, main

__all__ = ["app", "main"]
