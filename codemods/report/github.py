"""GitHub Actions workflow commands: one annotation per finding (`::error file=...,line=...::...`)."""

from __future__ import annotations

from ..findings import FileChange, Finding, Report
from . import relative


def render(report: Report, verbose: bool = False, mode: str = "check") -> str:
    """Annotations for the findings (those left, after a fix), the notes with `verbose`, the
    errors and, after a fix, the files changed; then a plain summary line for the log."""
    findings = report.remaining if mode == "fix" else report.findings
    lines = [_finding("error", f) for f in findings]
    if verbose:
        lines += [_finding("notice", f) for f in report.notes]
    lines += [_command("error", e.message, file=relative(e.path), title="contractfix") for e in report.errors]
    if mode == "fix":
        done = "fixed" if report.written else "would fix"
        lines += [_fixed(c, done) for c in report.changes]
        preview = "" if report.written else " (preview: nothing written)"
        lines.append(f"contractfix: {len(report.fixed)} {done.replace('would fix', 'to fix')}, {len(findings)} remaining, {len(report.errors)} error(s){preview}")
    else:
        lines.append(
            f"contractfix: {len(findings)} finding(s) in {report.files_scanned} file(s) scanned, "
            f"{sum(1 for f in findings if f.fix)} fixable, {len(report.errors)} error(s)"
        )
    return "\n".join(lines)


def _finding(level: str, f: Finding) -> str:
    message = f"{f.message} ({f.cls})"
    if f.note:
        message += f": {f.note}"
    if f.fix:
        flag = " --unsafe-fixes" if f.fix.applicability.value == "unsafe" else ""
        message += f"\n{f.fix.applicability.value} fix: {f.fix.description} (`contractfix fix{flag}`)"
    for e in f.evidence:
        message += f"\n{relative(e.path)}:{e.line}: {e.role + ': ' if e.role else ''}{e.text}"
    return _command(level, message, file=relative(f.path), line=f.line, col=f.column + 1, title=f"{f.rule} {f.name}")


def _fixed(change: FileChange, done: str) -> str:
    what = ", ".join(f"{f.rule} {f.cls}" for f in change.findings)
    return _command("notice", f"{done}: {what}", file=relative(change.path), title="contractfix fix")


def _command(level: str, message: str, **properties) -> str:
    props = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::{level} {props}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
