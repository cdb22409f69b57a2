"""``python -m recursor.cli``: the same as the ``recursor`` console script."""

from recursor.cli.main import main

main()
