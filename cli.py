"""contractfix command line: parse options, call the package, print results. No logic here.

Installed as `contractfix.cli` (codemods/cli.py links here), hence the relative imports."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from . import __version__, cliutil, engine, git, progress
from . import demo as demo_mod
from . import sweep as sweep_mod
from .gh import GhError
from .report import color
from .rules import ALL
from .rules.docs import explain_text, markdown_section, rules_table
from .smoke import SetupError, UsageError

app = typer.Typer(
    help="Find and fix pipeline-parallel contract violations in vLLM model files.",
    no_args_is_help=True,
    add_completion=True,
)


class Format(str, Enum):
    text = "text"
    json = "json"


class Output(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class Scope(str, Enum):
    entry = "entry"
    all = "all"


class CommitPer(str, Enum):
    run = "run"
    rule = "rule"


Paths = Annotated[list[Path] | None, typer.Argument(help="Files or folders (default: .).")]
Select = Annotated[list[str] | None, typer.Option("--select", help="Rule codes to check (comma-separated).")]
Ignore = Annotated[list[str] | None, typer.Option("--ignore", help="Rule codes to skip (comma-separated).")]
Exclude = Annotated[list[str] | None, typer.Option("--exclude", help="Glob of paths to skip.")]
ScopeOpt = Annotated[Scope | None, typer.Option("--pp002-scope", help="entry: registered forwards; all: every model forward.")]
Registry = Annotated[list[Path] | None, typer.Option("--registry", help="Path of vLLM's model registry.")]
ExtraPath = Annotated[list[Path] | None, typer.Option("--extra-path", help="A tree used only to resolve bases, producers and helpers (repeatable).")]
FormatOpt = Annotated[Format, typer.Option("--format", help="Output format.")]
OutputOpt = Annotated[Output, typer.Option("--format", help="Output format (github: workflow-command annotations).")]
Statistics = Annotated[bool, typer.Option("--statistics", help="Also show how many findings each rule has.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Also show what could not be verified.")]
Unsafe = Annotated[bool | None, typer.Option("--unsafe-fixes/--no-unsafe-fixes", help="Also apply unsafe fixes.")]
Jobs = Annotated[int, typer.Option("--jobs", "-j", help="Worker processes (0: one per core).")]
Cache = Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse per-file facts cached by content hash.")]


def _options(paths, select, ignore, exclude, scope, registry, unsafe=None, jobs=0, cache=True, extra_path=None):
    try:
        return cliutil.options(
            paths,
            select=cliutil.codes(select),
            ignore=cliutil.codes(ignore),
            exclude=tuple(exclude or ()),
            pp002_scope=scope.value if scope else None,
            registry=tuple(registry or ()),
            extra_path=tuple(extra_path or ()),
            unsafe_fixes=unsafe,
            jobs=jobs,
            cache=cache,
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
    extra_path: ExtraPath = None,
    format: OutputOpt = Output.text,
    statistics: Statistics = False,
    verbose: Verbose = False,
    jobs: Jobs = 0,
    cache: Cache = True,
    changed: Annotated[bool, typer.Option("--changed", help="Only the Python files changed against --base (committed, uncommitted or untracked).")] = False,
    base: Annotated[str | None, typer.Option("--base", help="With --changed: the ref to compare with (default: the merge base with the default branch).")] = None,
) -> None:
    """Report contract violations. Exit 0: none, 1: findings, 2: errors."""
    paths = paths or [Path(".")]
    options = _options(paths, select, ignore, exclude, pp002_scope, registry, jobs=jobs, cache=cache, extra_path=extra_path)
    targets = paths
    if changed or base:
        with _user_errors():
            if not changed:
                raise git.GitError("--base needs --changed")
            targets = git.changed_under(paths, base)
    with progress.shown():
        report = engine.check(targets, options)
        fixes = cliutil.preview(targets, options) if format is Output.sarif else None
    typer.echo(cliutil.render(report, format.value, verbose, "check", statistics, fixes, color.wanted(sys.stdout)))
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
    extra_path: ExtraPath = None,
    format: OutputOpt = Output.text,
    statistics: Statistics = False,
    verbose: Verbose = False,
    jobs: Jobs = 0,
    cache: Cache = True,
) -> None:
    """Apply fixes in place (safe ones; unsafe too with --unsafe-fixes). Exit 0: nothing left, 1: findings left, 2: errors."""
    paths = paths or [Path(".")]
    options = _options(paths, select, ignore, exclude, pp002_scope, registry, unsafe_fixes, jobs, cache, extra_path)
    with progress.shown():
        report = engine.fix(paths, options, write=not diff)
    if diff and format is Output.text:
        typer.echo(cliutil.text_report.unified_diff(report.changes), nl=False)
    else:
        typer.echo(cliutil.render(
            report, format.value, verbose, "fix", statistics, report if diff else None, color.wanted(sys.stdout)
        ))
    raise typer.Exit(cliutil.exit_code(report, remaining=True))


@app.command()
def sweep(
    repo: Annotated[Path | None, typer.Argument(help="A path in the repository (default: .).")] = None,
    base: Annotated[str, typer.Option("--base", help="Commit to fix and branch from.")] = "HEAD",
    branch: Annotated[str, typer.Option("--branch", help="Branch to create or update.")] = sweep_mod.DEFAULT_BRANCH,
    commit_per: Annotated[CommitPer, typer.Option("--commit-per", help="One commit for the run, or one per rule.")] = CommitPer.run,
    author: Annotated[str | None, typer.Option("--author", help="'Name <email>' (default: git's configured identity).")] = None,
    push: Annotated[str | None, typer.Option("--push", help="Remote (name, URL or path) to push the branch to, with a lease.")] = None,
    pr_body: Annotated[Path | None, typer.Option("--pr-body", help="Write the pull-request description (Markdown) here.")] = None,
    open_pr: Annotated[bool, typer.Option("--open-pr", help="Create or update the PR with `gh` (needs --push).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace the branch even if others committed on it.")] = False,
    smoke: Annotated[str | None, typer.Option("--smoke", metavar="TIER", help="Smoke the fixed files first (static, contract, engine); a failure stops the push and the PR.")] = None,
    unsafe_fixes: Unsafe = None,
    select: Select = None,
    ignore: Ignore = None,
    exclude: Exclude = None,
    pp002_scope: ScopeOpt = None,
    format: FormatOpt = Format.text,
) -> None:
    """Fix a commit in a temporary worktree and commit the result on a branch; optionally push and open a PR.
    Your checkout is left as it is. Exit 0: done (or nothing to do); 1: done, but some file could not be
    analysed or fixed, or the smoke run failed (then nothing is pushed); 2: refused or failed (see the error)."""
    overrides = dict(
        select=cliutil.codes(select),
        ignore=cliutil.codes(ignore),
        exclude=tuple(exclude or ()),
        pp002_scope=pp002_scope.value if pp002_scope else None,
        unsafe_fixes=unsafe_fixes,
    )
    request = sweep_mod.SweepRequest(
        repo=repo or Path("."),
        base=base,
        branch=branch,
        commit_per=commit_per.value,
        author=author,
        push=push,
        pr_body=pr_body,
        open_pr=open_pr,
        force=force,
        smoke=smoke,
        overrides=overrides,
    )
    with _user_errors():
        result = sweep_mod.sweep(request)
    typer.echo(json.dumps(result.to_json(), indent=2) if format is Format.json else result.summary())
    raise typer.Exit(result.exit_code)


@contextmanager
def _user_errors():
    """Print a git/gh/config problem as `error: ...` and exit 2."""
    try:
        yield
    except (git.GitError, GhError, SetupError, UsageError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR) from None


@app.command()
def rules(
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the README's rule section.")] = False,
) -> None:
    """List every rule: code, name, fix applicability, summary."""
    typer.echo(markdown_section(ALL.values()) if markdown else rules_table(ALL.values()))


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


@app.command()
def smoke(
    paths: Annotated[list[Path] | None, typer.Argument(help="Changed model files.")] = None,
    tier: Annotated[str | None, typer.Option("--tier", help="static, contract or engine (cumulative; default: the highest this machine can run).")] = None,
    arch: Annotated[str | None, typer.Option("--arch", help="Smoke this architecture only (alone: the installed module).")] = None,
    python: Annotated[Path | None, typer.Option("--python", help="A Python with vLLM (default: this one if it has vLLM, else the managed environment).")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Folder whose config.json is used for the architectures it lists.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the report as JSON to this file.")] = None,
    allow_skip: Annotated[bool, typer.Option("--allow-skip", help="Exit 0 even if checks were skipped.")] = False,
    setup: Annotated[bool, typer.Option("--setup", help="Create or reuse the managed vLLM environment first.")] = False,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds per harness process (default: scaled to the work).")] = None,
    base: Annotated[str, typer.Option("--base", help="Git revision the static tier diffs against.")] = "HEAD",
) -> None:
    """Prove fixes on real vLLM. Exit 0: all passed, 1: a check failed (or was skipped, without --allow-skip), 2: setup error."""
    from .smoke import command

    raise typer.Exit(command.main(
        paths or [], tier=tier, arch=arch, python=python, config=config, json_out=json_out, allow_skip=allow_skip,
        prepare=setup, timeout=timeout, base=base, echo=typer.echo, echo_err=lambda text: typer.echo(text, err=True),
    ))

