"""`python -m contractfix`: the same command line as the `contractfix` script."""

from .cli import run

run()
