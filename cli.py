"""contractfix command line: parse options, call the package, print results. No logic here.

Installed as `contractfix.cli` (codemods/cli.py links here), hence the relative imports. Start-up
loads neither gitpython nor the sweep, smoke or demo modules: the commands that need them import
them (every pre-commit run pays for what is imported here)."""

from __future__ import annotations

import atexit
import errno
import gc
import json
import os
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from . import __version__, cliutil, progress

app = typer.Typer(
    help="Find and fix pipeline-parallel contract violations in vLLM model files.",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"contractfix {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", "-V", is_eager=True, callback=_show_version, help="Print the version and exit.")] = False,
) -> None:
    """Find and fix pipeline-parallel contract violations in vLLM model files."""
    problem = cliutil.environment_problem()
    if problem:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR)


def _echo(text: str, nl: bool = True, mode: Color | None = None, styled: bool = False) -> None:
    """Print to standard output; one that cannot be written is an I/O error: exit 2."""
    try:
        cliutil.echo(text, nl, mode.value if mode else "never", styled)
    except cliutil.OutputError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR) from None


class Format(str, Enum):
    text = "text"
    json = "json"


class Output(str, Enum):
    text = "text"
    full = "full"
    json = "json"
    sarif = "sarif"
    github = "github"


TEXT = (Output.text, Output.full)


class Scope(str, Enum):
    entry = "entry"
    all = "all"


class CommitPer(str, Enum):
    run = "run"
    rule = "rule"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


Paths = Annotated[list[Path] | None, typer.Argument(help="Files or folders (default: .); `-` reads standard input.")]
Select = Annotated[list[str] | None, typer.Option("--select", help="Rule codes or prefixes to check (comma-separated; ALL for every rule).")]
Ignore = Annotated[list[str] | None, typer.Option("--ignore", help="Rule codes or prefixes to skip (comma-separated).")]
Exclude = Annotated[list[str] | None, typer.Option("--exclude", help="Glob of paths to skip (relative to the current folder).")]
ScopeOpt = Annotated[Scope | None, typer.Option("--pp002-scope", help="entry: registered forwards; all: every model forward.")]
Registry = Annotated[list[Path] | None, typer.Option("--registry", help="Path of vLLM's model registry.")]
ExtraPath = Annotated[list[Path] | None, typer.Option("--extra-path", help="A tree used only to resolve bases, producers and helpers (repeatable).")]
FormatOpt = Annotated[Format, typer.Option("--format", help="Output format.")]
OutputOpt = Annotated[Output, typer.Option("--format", help="Output format (text: a line per finding; full: each with its fix and evidence; github: workflow-command annotations).")]
ShowFixes = Annotated[bool, typer.Option("--show-fixes", help="With text output: each finding's whole message, its fix and its evidence (as --format full).")]
Statistics = Annotated[bool, typer.Option("--statistics", help="Also show how many findings each rule has.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Also show each finding's fix and evidence, and what could not be verified.")]
Unsafe = Annotated[bool | None, typer.Option("--unsafe-fixes/--no-unsafe-fixes", help="Also apply unsafe fixes.")]
WarningsAsErrors = Annotated[bool | None, typer.Option("--warnings-as-errors/--no-warnings-as-errors", help="Exit 1 for warnings too (findings the release cannot reach).")]
Jobs = Annotated[int | None, typer.Option("--jobs", "-j", help="Processes that parse the files and run the rules (default: one per core, at most 8; never more than the cores; 1: this one alone).")]
Cache = Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse per-file facts cached by content hash.")]
ConfigFile = Annotated[Path | None, typer.Option("--config", help="Read options from this file (a pyproject.toml, or a TOML file holding the table's keys) instead of searching.")]
Isolated = Annotated[bool, typer.Option("--isolated", help="Ignore every configuration file.")]
ShowSettings = Annotated[bool, typer.Option("--show-settings", help="Print the resolved options and where each came from, then exit.")]
ExitZero = Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when findings are left (errors still exit 2).")]
OutputFile = Annotated[Path | None, typer.Option("--output-file", "-o", help="Write the output to this file instead of standard output.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print findings and errors only, no summary.")]
ColorOpt = Annotated[Color, typer.Option("--color", help="Colour text output: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces it), always, never.")]
StdinFilename = Annotated[Path | None, typer.Option("--stdin-filename", help="With `-`: the path standard input stands for (its repository resolves bases and the registry).")]


def _options(paths, select, ignore, exclude, scope, registry, unsafe=None, jobs=None, cache=True, config_file=None, isolated=False, extra_path=None,
             warnings_as_errors=None):
    with _user_errors():
        return cliutil.options(
            paths,
            select=cliutil.codes(select),
            ignore=cliutil.codes(ignore),
            exclude=tuple(exclude or ()),
            pp002_scope=scope.value if scope else None,
            registry=tuple(registry or ()),
            extra_path=tuple(extra_path or ()),
            unsafe_fixes=unsafe,
            warnings_as_errors=warnings_as_errors,
            jobs=jobs,
            cache=cache,
            config_file=config_file,
            isolated=isolated,
        )


def _paths(paths: list[Path] | None, stdin_filename: Path | None) -> tuple[list[Path], Path | None]:
    with _user_errors():
        return cliutil.stdin_paths(paths or [Path(".")], stdin_filename)


@contextmanager
def _stdin(stand_in: Path | None):
    """Analyze standard input as the content of `stand_in` (nothing when None)."""
    if stand_in is None:
        yield None
        return
    from .discover import substitute

    data = sys.stdin.buffer.read()
    with substitute(stand_in, data):
        yield data


def _emit(text: str, output_file: Path | None, mode: Color, styled: bool = True, end: str = "\n") -> None:
    """Print `text` (styled when it is text output and colour is on), or write it to `output_file`."""
    if output_file is None:
        _echo(text + end, nl=False, mode=mode, styled=styled)
        return
    try:
        output_file.write_text(text + end, "utf-8")
    except OSError as error:
        typer.echo(f"error: {output_file}: cannot write: {error.strerror or error}", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR) from None


def _settings(options, show: bool, output_file: Path | None) -> None:
    if show:
        _emit(cliutil.settings(options), output_file, Color.never)
        raise typer.Exit(cliutil.EXIT_OK)


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
    show_fixes: ShowFixes = False,
    statistics: Statistics = False,
    verbose: Verbose = False,
    jobs: Jobs = None,
    cache: Cache = True,
    changed: Annotated[bool, typer.Option("--changed", help="Only the Python files changed against --base (committed, uncommitted or untracked).")] = False,
    base: Annotated[str | None, typer.Option("--base", help="With --changed: the ref to compare with (default: the merge base with the default branch).")] = None,
    config_file: ConfigFile = None,
    isolated: Isolated = False,
    show_settings: ShowSettings = False,
    exit_zero: ExitZero = False,
    warnings_as_errors: WarningsAsErrors = None,
    output_file: OutputFile = None,
    quiet: Quiet = False,
    color_mode: ColorOpt = Color.auto,
    stdin_filename: StdinFilename = None,
    add_noqa: Annotated[bool, typer.Option("--add-noqa", help="Write `# contractfix: ignore[CODE]` on the line of every finding left.")] = False,
) -> None:
    """Report contract violations. Exit 0: none (or warnings only), 1: findings, 2: errors."""
    paths, stand_in = _paths(paths, stdin_filename)
    format = Output.full if show_fixes and format is Output.text else format
    options = _options(paths, select, ignore, exclude, pp002_scope, registry, jobs=jobs, cache=cache,
                       config_file=config_file, isolated=isolated, extra_path=extra_path,
                       warnings_as_errors=warnings_as_errors)
    _settings(options, show_settings, output_file)
    targets = paths
    if changed or base:
        from . import gitops

        with _user_errors():
            if not changed:
                raise gitops.GitError("--base needs --changed")
            targets = gitops.changed_under(paths, base)
    if add_noqa:
        from . import noqa

        with _stdin(stand_in), progress.shown():
            report, _ = cliutil.checked(targets, options)
        added, errors = noqa.add(report.findings)
        report.errors.extend(errors)
        if not quiet:
            typer.echo(f"added {added} suppression(s)", err=True)
        _emit("\n".join(f"{e.path}: error: {e.message}" for e in errors), output_file, color_mode) if errors else None
        raise typer.Exit(cliutil.EXIT_ERROR if report.errors else cliutil.EXIT_OK)
    with _stdin(stand_in), progress.shown():
        out, code = cliutil.rendered_check(targets, options, format.value, verbose, statistics, quiet,
                                           reuse=stand_in is None and not changed)
    _emit(out, output_file, color_mode, format in TEXT)
    raise typer.Exit(cliutil.EXIT_OK if exit_zero and code == cliutil.EXIT_FINDINGS else code)


@app.command()
def fix(
    paths: Paths = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff; write nothing. Exit 1 when there is a diff.")] = False,
    unsafe_fixes: Unsafe = None,
    select: Select = None,
    ignore: Ignore = None,
    exclude: Exclude = None,
    pp002_scope: ScopeOpt = None,
    registry: Registry = None,
    extra_path: ExtraPath = None,
    format: OutputOpt = Output.text,
    show_fixes: ShowFixes = False,
    statistics: Statistics = False,
    verbose: Verbose = False,
    jobs: Jobs = None,
    cache: Cache = True,
    config_file: ConfigFile = None,
    isolated: Isolated = False,
    show_settings: ShowSettings = False,
    exit_zero: ExitZero = False,
    warnings_as_errors: WarningsAsErrors = None,
    output_file: OutputFile = None,
    quiet: Quiet = False,
    color_mode: ColorOpt = Color.auto,
    stdin_filename: StdinFilename = None,
) -> None:
    """Apply fixes in place (safe ones; unsafe too with --unsafe-fixes); `-` prints the fixed standard
    input. Exit 0: nothing left, 1: findings left (or, with --diff, fixes pending), 2: errors."""
    paths, stand_in = _paths(paths, stdin_filename)
    format = Output.full if show_fixes and format is Output.text else format
    options = _options(paths, select, ignore, exclude, pp002_scope, registry, unsafe_fixes, jobs, cache,
                       config_file, isolated, extra_path, warnings_as_errors)
    _settings(options, show_settings, output_file)
    from . import engine
    from .report import text as text_report

    with _stdin(stand_in) as data, progress.shown():
        report = engine.fix(paths, options, write=not diff and stand_in is None)
    if data is not None:
        sys.stdout.buffer.write(report.changes[0].after if report.changes else data)
        sys.stdout.buffer.flush()
        left = cliutil.render(report, "text", verbose, "fix", quiet=True)
        if left:
            typer.echo(left, err=True)
    elif diff and format in TEXT:
        _emit(text_report.unified_diff(report.changes), output_file, Color.never, styled=False, end="")
        for line in text_report.error_lines(report):  # beside the patch, not in it
            typer.echo(line, err=True)
    else:
        out = cliutil.render(report, format.value, verbose, "fix", statistics, report if diff else None, quiet)
        _emit(out, output_file, color_mode, format in TEXT)
    raise typer.Exit(cliutil.exit_code(report, remaining=True, exit_zero=exit_zero, diff=diff,
                                       warnings_as_errors=options.warnings_as_errors))


@app.command()
def sweep(
    repo: Annotated[Path | None, typer.Argument(help="A path in the repository (default: .).")] = None,
    base: Annotated[str, typer.Option("--base", help="Commit to fix and branch from.")] = "HEAD",
    branch: Annotated[str, typer.Option("--branch", help="Branch to create or update.")] = "contractfix/pp-contracts",
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
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan (base, branch, files, fixes, push, PR) and change nothing.")] = False,
    pr_repo: Annotated[str | None, typer.Option("--pr-repo", metavar="OWNER/NAME", help="With --open-pr: the repository to open the PR in (default: the base's remote, else the pushed-to one).")] = None,
    draft: Annotated[bool, typer.Option("--draft", help="With --open-pr: create the PR as a draft.")] = False,
    label: Annotated[list[str] | None, typer.Option("--label", help="With --open-pr: a label for the PR (repeatable).")] = None,
) -> None:
    """Fix a commit in a temporary worktree and commit the result on a branch; optionally push and open a PR.
    Your checkout is left as it is. Exit 0: done (or nothing to do); 1: done, but some file could not be
    analysed or fixed, or the smoke run failed (then nothing is pushed); 2: refused or failed (see the error;
    with --format json the JSON object holds it as "error", and what was done before it)."""
    gc.enable()  # `run` turned it off; a sweep runs the engine once per rule, and each run's session is a cycle
    from . import sweep as sweep_mod

    result = sweep_mod.SweepResult(branch, base)
    try:
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
            dry_run=dry_run,
            pr_repo=pr_repo,
            draft=draft,
            labels=tuple(label or ()),
        )
        with progress.shown():
            sweep_mod.sweep(request, result)
    except _user_error_types() as error:
        result.status, result.error = "error", str(error)
        if format is not Format.json:
            typer.echo(f"error: {error}", err=True)
    if format is Format.json:
        _echo(json.dumps(result.to_json(), indent=2))
    elif result.error is None:
        _echo(result.summary())
    raise typer.Exit(result.exit_code)


@contextmanager
def _user_errors():
    """Print a git/gh/config problem as `error: ...` and exit 2."""
    try:
        yield
    except Exception as error:
        if not isinstance(error, _user_error_types()):
            raise
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR) from None


def _user_error_types() -> tuple[type[Exception], ...]:
    """ValueError (bad options and config) and the errors of the git, gh and smoke modules, of
    those loaded: one not loaded cannot have raised (start-up loads none of them)."""
    named = (("gitops", "GitError"), ("gh", "GhError"), ("smoke", "SetupError"), ("smoke", "UsageError"))
    modules = {m: f"{__package__}.{m}" for m, _ in named}
    loaded = [getattr(sys.modules[modules[m]], name) for m, name in named if modules[m] in sys.modules]
    return (ValueError, *loaded)


@app.command()
def rules(
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the README's rule table.")] = False,
    docs: Annotated[Path | None, typer.Option("--docs", help="Write one Markdown page per rule, and their index, into this folder.")] = None,
) -> None:
    """List every rule: code, name, fix applicability, summary."""
    from .rules import ALL
    from .rules.docs import DOCS, markdown_table, pages, rules_table

    if docs is not None:
        with _user_errors():
            if not docs.is_dir():
                raise ValueError(f"--docs {docs}: not a folder")
        for name, text in pages(ALL.values()).items():
            try:
                (docs / name).write_text(text, "utf-8")
            except OSError as error:
                typer.echo(f"error: {docs / name}: cannot write: {error.strerror or error}", err=True)
                raise typer.Exit(cliutil.EXIT_ERROR) from None
        return
    _echo(markdown_table(ALL.values(), DOCS) if markdown else rules_table(ALL.values()))


@app.command()
def explain(code: str) -> None:
    """Show a rule's rationale and a before/after example."""
    from .rules import ALL
    from .rules.docs import explain_text

    rule = ALL.get(code.upper())
    if rule is None:
        typer.echo(f"error: no rule {code!r}; see `contractfix rules`", err=True)
        raise typer.Exit(cliutil.EXIT_ERROR)
    _echo(explain_text(rule))


@app.command()
def demo() -> None:
    """Run the main job on a bundled example tree (copied to a temp dir) and show the result."""
    from . import demo as demo_mod

    _echo(demo_mod.run())


@app.command()
def version() -> None:
    """Print the version."""
    _echo(__version__)


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
    remove: Annotated[bool, typer.Option("--remove", help="Delete the managed vLLM environment and the kept vLLM wheel, then exit.")] = False,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds per harness process (default: scaled to the work).")] = None,
    base: Annotated[str, typer.Option("--base", help="Git revision the static tier diffs against.")] = "HEAD",
) -> None:
    """Prove fixes on real vLLM. Exit 0: all passed, 1: a check failed (or was skipped, without --allow-skip), 2: setup error."""
    from .smoke import command

    raise typer.Exit(command.main(
        paths or [], tier=tier, arch=arch, python=python, config=config, json_out=json_out, allow_skip=allow_skip,
        prepare=setup, remove=remove, timeout=timeout, base=base, echo=_echo, echo_err=lambda text: typer.echo(text, err=True),
    ))


@contextmanager
def _only_the_command(first: list[str]):
    """Hand typer only the command the arguments name: it builds each command it is given from
    the function's signature and type hints, about 30 ms for all of them, which every
    pre-commit run would pay for one. Help, completion and a name that is no command see them all."""
    commands = app.registered_commands
    picked = [c for c in commands if first and _name(c) == first[0]]
    if picked and "_CONTRACTFIX_COMPLETE" not in os.environ:
        app.registered_commands = picked
    try:
        yield
    finally:
        app.registered_commands = commands


def _name(command: typer.models.CommandInfo) -> str:
    return command.name or getattr(command.callback, "__name__", "").replace("_", "-")


def run() -> None:
    """The `contractfix` script: `app`, then the exit handlers, then an exit that leaves the
    objects of the run to the operating system (a whole tree's facts take about 30 ms to free
    one by one). An exception still unwinds as usual.

    The cyclic collector is off: a check frees what it is done with by reference counting, and
    the cycles it leaves (a few thousand objects, then its session at the end) go with the
    process. With it on, the main process of a cold check of vLLM 0.33.0 spends 50-70 ms
    traversing the facts it holds, to collect those few thousand. `sweep` turns it back on."""
    gc.disable()
    try:
        with _only_the_command(sys.argv[1:2]):
            app(prog_name="contractfix")
    except SystemExit as stop:
        if stop.code is not None and not isinstance(stop.code, int):
            raise
        code = stop.code or 0
    except OSError as error:
        if error.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        sys.stderr.write(f"error: {error.strerror}: raise the limit (`ulimit -n`) and run again\n")
        code = cliutil.EXIT_ERROR
    else:
        code = 0
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler or debugger writes its results after this returns
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with the descriptor closed
                stream.flush()
        except (OSError, ValueError):  # a reader gone (a closed pipe), or a stream closed
            code = code or 1
    os._exit(code)
