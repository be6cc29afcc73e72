"""Glue between command-line values and the library: options, exit codes, output.

The engine and the renderers are imported where they are used: a check whose output the results
cache still holds needs neither (`rendered_check`)."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import config, inputs, results
from .report import color

if TYPE_CHECKING:
    from .findings import Report

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = Path("-")


def codes(values: list[str] | None) -> tuple[str, ...]:
    """`--select PP001,PP002 --select PP003` -> ("PP001", "PP002", "PP003"); checked by `config.load`."""
    return tuple(c.strip() for v in values or () for c in v.split(",") if c.strip())


def options(paths: list[Path], **given) -> config.Options:
    """Options for a run over `paths`; `config.ConfigError` (a ValueError) for a bad value."""
    if given.get("jobs") is not None and given["jobs"] < 1:
        raise config.ConfigError(f"--jobs must be at least 1, not {given['jobs']}")
    return config.load(paths[0] if paths else Path("."), **given)


def stdin_paths(paths: list[Path], stdin_filename: Path | None) -> tuple[list[Path], Path | None]:
    """(paths to analyze, the path standard input stands for, or None). `-` must be alone;
    without `--stdin-filename` it stands for `stdin.py` in the current folder."""
    if STDIN not in paths:
        if stdin_filename is not None:
            raise config.ConfigError("--stdin-filename needs `-` as the path")
        return paths, None
    if len(paths) > 1:
        raise config.ConfigError("`-` (standard input) cannot be combined with other paths")
    stand_in = stdin_filename or Path("stdin.py")
    return [stand_in], stand_in


def settings(options: config.Options) -> str:
    """`--show-settings`: every option, its value and where it came from."""
    lines = []
    for item in fields(options):
        if item.name == "sources":
            continue
        value = getattr(options, item.name)
        shown = [_shown(v) for v in value] if isinstance(value, tuple) else _shown(value)
        lines.append(f"{item.name.replace('_', '-')} = {shown}  # {options.sources.get(item.name, 'default')}")
    return "\n".join(lines)


def _shown(value):
    if isinstance(value, config.Glob):
        return f"{value.pattern} (in {value.anchor})"
    if isinstance(value, tuple):
        return [_shown(v) for v in value]
    return str(value) if isinstance(value, Path) else value


def exit_code(report: Report, remaining: bool = False, exit_zero: bool = False, diff: bool = False,
              warnings_as_errors: bool = False) -> int:
    """2 on errors; else 1 when findings of level "error" are left (warnings too with
    `warnings_as_errors`; or, with `diff`, when fixes are pending) unless `exit_zero`; else 0."""
    if report.errors:
        return EXIT_ERROR
    left = [f for f in (report.remaining if remaining else report.findings) if warnings_as_errors or f.level == "error"]
    return EXIT_FINDINGS if (left or diff and report.changes) and not exit_zero else EXIT_OK


def checked(paths: list[Path], options: config.Options, with_fixes: bool = False) -> tuple[Report, Report | None]:
    """A check report and, `with_fixes`, the fixes `fix --unsafe-fixes` would make (computed in
    memory from the same analysis, nothing written)."""
    from . import engine

    if with_fixes:
        return engine.check_with_fixes(paths, options)
    return engine.check(paths, options), None


REUSED_FORMATS = ("text", "full", "json")
"""Formats whose output depends on the findings alone (SARIF also holds the fixes a second
analysis makes; GitHub's also writes the step summary)."""


def rendered_check(paths: list[Path], options: config.Options, fmt: str, verbose: bool, statistics: bool,
                   quiet: bool, reuse: bool = True) -> tuple[str, int]:
    """A check's output in `fmt` and its exit code before `--exit-zero`. With the cache on and
    `reuse`, the output of an earlier run of the same command is reused while nothing it was
    computed from has changed (`results`), and a new one is kept for the next run."""
    if not (reuse and options.cache and fmt in REUSED_FORMATS):
        report, fixes = checked(paths, options, with_fixes=fmt == "sarif")
        out = render(report, fmt, verbose, "check", statistics, fixes, quiet)
        return out, exit_code(report, warnings_as_errors=options.warnings_as_errors)
    from .cachedir import default_folder
    from .discover import discover

    folder = default_folder()
    found = discover(paths, options.exclude)
    name = results.key(options, found.files, paths, (fmt, verbose, statistics, quiet, found.errors))
    kept = results.get(folder, name)
    if kept is not None:
        return kept.output, kept.code
    from . import engine

    started = time.time_ns()
    with inputs.recorded(skipped=(folder, results.PACKAGE)) as seen:
        report = engine.check(paths, options, found)
        out = render(report, fmt, verbose, "check", statistics, None, quiet)
    code = exit_code(report, warnings_as_errors=options.warnings_as_errors)
    if all(inputs.settled(stamp, started) for stamp in seen.stamps.values()):  # else the next run checks again
        results.put(folder, name, results.Entry(out, code, seen.stamps))
    return out, code


def render(
    report: Report, fmt: str, verbose: bool, mode: str, statistics: bool = False, fixes: Report | None = None,
    quiet: bool = False,
) -> str:
    """`report` in format `fmt` ("text", "full": text with each finding's whole message, fix and
    evidence, "json", "sarif", "github"); `mode` is "check" or "fix".
    `statistics` adds counts per rule. `fixes` (from `checked`, or a `fix` run that wrote nothing)
    gives SARIF results their fixes; without it, SARIF after a fix lists only what is left.
    `quiet` leaves out the summary of text output."""
    from .report import json_format as json_report
    from .report import stats
    from .report import text as text_report

    rows = stats.rows(report, mode) if statistics else None
    if fmt == "json":
        doc = json_report.document(report, verbose)
        if rows is not None:
            doc["statistics"] = rows
        return json.dumps(doc, indent=2)
    if fmt == "sarif":
        from .report import sarif

        shown = replace(report, findings=report.remaining) if mode == "fix" and fixes is None else report
        return json.dumps(sarif.document(shown, verbose, fixes, rows), indent=2)
    if fmt == "github":
        from .report import github as github_report

        out = github_report.render(report, verbose, mode)
        github_report.write_step_summary(report, mode)
    elif mode == "fix":
        out = text_report.render_fix(report, verbose, quiet, full=fmt == "full")
    else:
        out = text_report.render(report, verbose, quiet, full=fmt == "full")
    return out + ("\n\n" + stats.table(rows) if rows is not None else "")


class OutputError(Exception):
    """Standard output cannot take the report (closed, full disk, broken pipe)."""


def environment_problem() -> str | None:
    """What makes any command unable to run here (checked before it changes anything)."""
    if sys.stdout is None:
        return "standard output is closed"
    try:
        os.getcwd()
    except FileNotFoundError:
        return "the current directory no longer exists"
    return None


def echo(text: str, nl: bool = True, mode: str = "never", styled: bool = False) -> None:
    """Write `text` to standard output (styled when `styled` and colour `mode` allows) and flush
    it. Raises OutputError when it cannot be written; standard output then points at the null
    device, so exiting does not fail a second time."""
    try:
        if sys.stdout is None:
            raise OSError("standard output is closed")
        color.emit(text, sys.stdout, mode, styled, "\n" if nl else "")
    except OSError as error:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        raise OutputError(f"cannot write the output: {error.strerror or error}") from None
