"""`python -m contractfix`: the same command line as the `contractfix` script."""

from .cli import app

app(prog_name="contractfix")
