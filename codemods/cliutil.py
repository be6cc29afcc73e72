"""Glue between command-line values and the library: options, exit codes, output."""

from __future__ import annotations

import json
from pathlib import Path

from . import config
from .findings import Report
from .report import json as json_report
from .report import text as text_report

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


def render(report: Report, fmt: str, verbose: bool, mode: str) -> str:
    if fmt == "json":
        return json.dumps(json_report.document(report, verbose), indent=2)
    if mode == "fix":
        return text_report.render_fix(report, verbose)
    return text_report.render(report, verbose)
