"""Glue between command-line values and the library: options, exit codes, output."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from . import config, engine
from .findings import Report
from .report import github as github_report
from .report import json_format as json_report
from .report import stats
from .report import text as text_report
from .report.color import colorize

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def codes(values: list[str] | None) -> tuple[str, ...]:
    """`--select PP001,PP002 --select PP003` -> ("PP001", "PP002", "PP003")."""
    return tuple(c.strip().upper() for v in values or () for c in v.split(",") if c.strip())


def options(paths: list[Path], **given) -> config.Options:
    return config.load(paths[0] if paths else Path("."), **given)


def exit_code(report: Report, remaining: bool = False) -> int:
    if report.errors:
        return EXIT_ERROR
    left = report.remaining if remaining else report.findings
    return EXIT_FINDINGS if left else EXIT_OK


def checked(paths: list[Path], options: config.Options, with_fixes: bool = False) -> tuple[Report, Report | None]:
    """A check report and, `with_fixes`, the fixes `fix --unsafe-fixes` would make (computed in
    memory from the same analysis, nothing written)."""
    if with_fixes:
        return engine.check_with_fixes(paths, options)
    return engine.check(paths, options), None


def render(
    report: Report, fmt: str, verbose: bool, mode: str, statistics: bool = False, fixes: Report | None = None,
    color: bool = False,
) -> str:
    """`report` in format `fmt` ("text", "json", "sarif", "github"); `mode` is "check" or "fix".
    `statistics` adds counts per rule. `fixes` (a `preview`, or a `fix` run that wrote nothing)
    gives SARIF results their fixes; without it, SARIF after a fix lists only what is left."""
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
        out = github_report.render(report, verbose, mode)
        github_report.write_step_summary(report, mode)
    elif mode == "fix":
        out = text_report.render_fix(report, verbose)
    else:
        out = text_report.render(report, verbose)
    out += "\n\n" + stats.table(rows) if rows is not None else ""
    return colorize(out) if color and fmt == "text" else out


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


def echo(text: str, nl: bool = True) -> None:
    """Write `text` to standard output and flush it. Raises OutputError when it cannot be written;
    standard output then points at the null device, so exiting does not fail a second time."""
    try:
        if sys.stdout is None:
            raise OSError("standard output is closed")
        sys.stdout.write(text + ("\n" if nl else ""))
        sys.stdout.flush()
    except OSError as error:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        raise OutputError(f"cannot write the output: {error.strerror or error}") from None
