"""GitHub Actions: one annotation per finding (`::error file=...,line=...::...`), and the whole
list as a table in the job summary (GitHub shows only the first 10 error annotations of a step)."""

from __future__ import annotations

import os
from pathlib import Path

from ..findings import FileChange, Finding, Report
from ..rules import ALL
from . import fixable_counts, level_counts, relative, repository_root
from .sarif import help_uri

SUMMARY_LIMIT = 1000 * 1024  # GitHub refuses a step summary over 1 MiB


def render(report: Report, verbose: bool = False, mode: str = "check") -> str:
    """Annotations for the findings (those left, after a fix), the notes with `verbose`, the
    errors and, after a fix, the files changed; then a plain summary line for the log. Paths are
    relative to the repository root, where GitHub looks for them."""
    root = repository_root()
    findings = report.remaining if mode == "fix" else report.findings
    lines = [_finding(f.level, f, root) for f in findings]
    if verbose:
        lines += [_finding("notice", f, root) for f in report.notes]
    lines += [_command("error", e.message, file=relative(e.path, root), title="contractfix") for e in report.errors]
    if mode == "fix":
        lines += [_fixed(c, "fixed" if report.written else "would fix", root) for c in report.changes]
    lines.append(f"contractfix: {_counts(report, mode)}")
    return "\n".join(lines)


def write_step_summary(report: Report, mode: str = "check") -> None:
    """Append `step_summary` to the file $GITHUB_STEP_SUMMARY names, when it is set."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(step_summary(report, mode))


def step_summary(report: Report, mode: str = "check") -> str:
    """Markdown: the counts, then one table row per finding (left, after a fix) and per error,
    each rule linked to its documentation; rows past GitHub's size limit are counted, not shown."""
    root = repository_root()
    findings = report.remaining if mode == "fix" else report.findings
    rows = [_row(f"`{relative(f.path, root)}:{f.line}:{f.column + 1}`", f"[{f.rule}]({help_uri(ALL[f.rule])}) {f.name}",
                 f"{f.message} ({f.cls})" + (f": {f.note}" if f.note else ""),
                 f"{f.fix.applicability.value}: {f.fix.description}" if f.fix else "none") for f in findings]
    rows += [_row(f"`{relative(e.path, root)}`", "error", e.message, "") for e in report.errors]
    head = f"### contractfix {mode}\n\n{_counts(report, mode)}\n"
    if not rows:
        return head + "\n"
    table = ["", "| location | rule | finding | fix |", "|---|---|---|---|"]
    size = len(head.encode()) + 200
    for i, row in enumerate(rows):
        size += len(row.encode()) + 1
        if size > SUMMARY_LIMIT:
            table.append(f"\n... and {len(rows) - i} more (see the log)")
            break
        table.append(row)
    return head + "\n".join(table) + "\n\n"


def _counts(report: Report, mode: str) -> str:
    findings = report.remaining if mode == "fix" else report.findings
    if mode == "fix":
        done = "fixed" if report.written else "to fix"
        preview = "" if report.written else " (preview: nothing written)"
        return f"{len(report.fixed)} {done}, {len(findings)} remaining, {len(report.errors)} error(s){preview}"
    return (f"{level_counts(findings)} in {report.files_scanned} file(s) scanned, "
            f"{_fixable(findings)}, {len(report.errors)} file error(s)")


def _fixable(findings: list[Finding]) -> str:
    safe, unsafe = fixable_counts(findings)
    return f"{safe} fixable" + (f" (+{unsafe} with --unsafe-fixes)" if unsafe else "")


def _row(*cells: str) -> str:
    """A table row, each cell on one line with its pipes escaped (also valid inside `code`)."""
    return "| " + " | ".join(c.replace("|", "\\|").replace("\r", "").replace("\n", "<br>") for c in cells) + " |"


def _finding(level: str, f: Finding, root: Path) -> str:
    message = f"{f.message} ({f.cls})"
    if f.note:
        message += f": {f.note}"
    if f.fix:
        flag = " --unsafe-fixes" if f.fix.applicability.value == "unsafe" else ""
        message += f"\n{f.fix.applicability.value} fix: {f.fix.description} (`contractfix fix{flag}`)"
    for e in f.evidence:
        message += f"\n{relative(e.path, root)}:{e.line}: {e.role + ': ' if e.role else ''}{e.text}"
    return _command(level, message, file=relative(f.path, root), line=f.line, col=f.column + 1, title=f"{f.rule} {f.name}")


def _fixed(change: FileChange, done: str, root: Path) -> str:
    what = ", ".join(f"{f.rule} {f.cls}" for f in change.findings)
    return _command("notice", f"{done}: {what}", file=relative(change.path, root), title="contractfix fix")


def _command(level: str, message: str, **properties) -> str:
    props = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::{level} {props}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
