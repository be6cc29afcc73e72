"""contractfix command line: parse options, call `codemods`, print results. No logic here."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from codemods import __version__, cliutil, demo as demo_mod, engine
from codemods.rules import ALL
from codemods.rules.docs import explain_text, rules_table

app = typer.Typer(
    help="Find and fix pipeline-parallel contract violations in vLLM model files.",
    no_args_is_help=True,
    add_completion=True,
)


class Format(str, Enum):
    text = "text"
    json = "json"


class Scope(str, Enum):
    entry = "entry"
    all = "all"


Paths = Annotated[Optional[list[Path]], typer.Argument(help="Files or folders (default: .).")]
Select = Annotated[Optional[list[str]], typer.Option("--select", help="Rule codes to check (comma-separated).")]
Ignore = Annotated[Optional[list[str]], typer.Option("--ignore", help="Rule codes to skip (comma-separated).")]
Exclude = Annotated[Optional[list[str]], typer.Option("--exclude", help="Glob of paths to skip.")]
ScopeOpt = Annotated[Optional[Scope], typer.Option("--pp002-scope", help="entry: registered forwards; all: every model forward.")]
Registry = Annotated[Optional[list[Path]], typer.Option("--registry", help="Path of vLLM's model registry.")]
FormatOpt = Annotated[Format, typer.Option("--format", help="Output format.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Also show what could not be verified.")]
Unsafe = Annotated[Optional[bool], typer.Option("--unsafe-fixes/--no-unsafe-fixes", help="Also apply unsafe fixes.")]
Jobs = Annotated[int, typer.Option("--jobs", "-j", help="Worker processes (0: one per core).")]


def _options(paths, select, ignore, exclude, scope, registry, unsafe=None, verbose=False, jobs=0):
    try:
        return cliutil.options(
            paths,
            select=cliutil.codes(select),
            ignore=cliutil.codes(ignore),
            exclude=tuple(exclude or ()),
            pp002_scope=scope.value if scope else None,
            registry=tuple(registry or ()),
            unsafe_fixes=unsafe,
            verbose=verbose,
            jobs=jobs,
        )
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR) from None


@app.command()
def check(
    paths: Paths = None,
    select: Select = None,
    ignore: Ignore = None,
    exclude: Exclude = None,
    pp002_scope: ScopeOpt = None,
    registry: Registry = None,
    format: FormatOpt = Format.text,
    verbose: Verbose = False,
    jobs: Jobs = 0,
) -> None:
    """Report contract violations. Exit 0: none, 1: findings, 2: errors."""
    paths = paths or [Path(".")]
    options = _options(paths, select, ignore, exclude, pp002_scope, registry, verbose=verbose, jobs=jobs)
    report = engine.check(paths, options)
    typer.echo(cliutil.render(report, format.value, verbose, "check"))
    raise typer.Exit(cliutil.exit_code(report))


@app.command()
def fix(
    paths: Paths = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff; write nothing.")] = False,
    unsafe_fixes: Unsafe = None,
    select: Select = None,
    ignore: Ignore = None,
    exclude: Exclude = None,
    pp002_scope: ScopeOpt = None,
    registry: Registry = None,
    format: FormatOpt = Format.text,
    verbose: Verbose = False,
    jobs: Jobs = 0,
) -> None:
    """Apply fixes in place (safe ones; unsafe too with --unsafe-fixes). Exit 0: nothing left, 1: findings left, 2: errors."""
    paths = paths or [Path(".")]
    options = _options(paths, select, ignore, exclude, pp002_scope, registry, unsafe_fixes, verbose, jobs)
    report = engine.fix(paths, options, write=not diff)
    if diff and format is Format.text:
        typer.echo(cliutil.text_report.unified_diff(report.changes), nl=False)
    else:
        typer.echo(cliutil.render(report, format.value, verbose, "fix"))
    raise typer.Exit(cliutil.exit_code(report, remaining=True))


@app.command()
def rules() -> None:
    """List every rule: code, name, fix applicability, summary."""
    typer.echo(rules_table(ALL.values()))


@app.command()
def explain(code: str) -> None:
    """Show a rule's rationale and a before/after example."""
    rule = ALL.get(code.upper())
    if rule is None:
        typer.echo(f"error: no rule {code!r}; see `contractfix rules`", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR)
    typer.echo(explain_text(rule))


@app.command()
def demo() -> None:
    """Run the main job on a bundled example tree (copied to a temp dir) and show the result."""
    typer.echo(demo_mod.run())


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


if __name__ == "__main__":
    app()
