"""Human-readable output: a line per finding (or, in full, with its fix and evidence), diffs, summaries."""

from __future__ import annotations

import difflib

from ..findings import Applicability, FileChange, Finding, Report
from ..sourcelines import split_lines
from . import fixable_counts, level_counts, relative, relative_text

HEADLINE_ENDS = (": ", "; ", " (")
"""Where a finding's message leaves its headline for the detail, outside `code` and "keys"."""
LATENT = "latent: "


def headline(message: str) -> str:
    """The message up to where its detail starts: a warning's `latent: ` is its level's to say."""
    text = message.removeprefix(LATENT)
    quoted = ""
    for i, char in enumerate(text):
        if char in "`\"":
            quoted = "" if quoted == char else quoted or char
        elif not quoted and text.startswith(HEADLINE_ENDS, i):
            return text[:i]
    return text


def short_line(finding: Finding) -> str:
    """`path:line:col: CODE headline (Class) [*]`: the class unless the headline names it, `[*]`
    for a safe fix (as ruff marks one); a warning's headline says it is one."""
    text = ("warning: " if finding.level == "warning" else "") + headline(finding.message)
    named = f" ({finding.cls})" if finding.cls and finding.cls not in text else ""
    mark = " [*]" if finding.fix and finding.fix.applicability is Applicability.SAFE else ""
    return f"{relative(finding.path)}:{finding.line}:{finding.column + 1}: {finding.rule} {text}{named}{mark}"


def finding_lines(finding: Finding) -> list[str]:
    fix = f" [{finding.fix.applicability.value} fix: {finding.fix.description}]" if finding.fix else ""
    lines = [
        f"{relative(finding.path)}:{finding.line}:{finding.column + 1}: {finding.rule} "
        f"{finding.message}" + (f" ({finding.cls})" if finding.cls else "") + fix
    ]
    for e in finding.evidence:
        role = f"{e.role}: " if e.role else ""
        lines.append(f"    {relative(e.path)}:{e.line}: {role}{e.text}")
    return lines


def context_lines(report: Report) -> list[str]:
    """`--verbose`: what the run used (entry source, extra trees) and what it could not verify."""
    return [f"used: {relative_text(line)}" for line in report.context] + [
        f"not verified: {relative_text(line)}" for line in report.unverified
    ]


def error_lines(report: Report) -> list[str]:
    """One line per file the run could not check or fix, and why."""
    return [f"{relative(error.path)}: error: {error.message}" for error in report.errors]


def render(report: Report, verbose: bool = False, quiet: bool = False, full: bool = False) -> str:
    """Findings (one short line each; `full` or `verbose`: the whole message, the fix and the
    evidence), errors and (unless `quiet`) a summary line."""
    lines: list[str] = []
    for finding in report.findings:
        lines.extend(finding_lines(finding) if full or verbose else [short_line(finding)])
    if verbose:
        for note in report.notes:
            lines.extend(finding_lines(note))
        lines.extend(context_lines(report))
    lines.extend(error_lines(report))
    if quiet:
        return "\n".join(lines)
    safe, unsafe = fixable_counts(report.findings)
    lines.append(
        f"{level_counts(report.findings)} in {report.files_scanned} file(s) scanned, "
        f"{safe} fixable" + (f" (+{unsafe} with --unsafe-fixes)" if unsafe else "")
        + f", {len(report.errors)} file error(s)"
        + (f", {len(report.notes)} left unverified (--verbose)" if report.notes and not verbose else "")
    )
    return "\n".join(lines)


def render_fix(report: Report, verbose: bool = False, quiet: bool = False, full: bool = False) -> str:
    """What was (or would be) fixed, what is left, errors and a summary; `quiet`: only what is
    left and errors."""
    done = "fixed" if report.written else "would fix"
    lines = [] if quiet else [f"{done} {relative(c.path)}: " + ", ".join(f"{f.rule} {f.cls}" for f in c.findings) for c in report.changes]
    remaining = report.remaining
    if remaining:
        if not quiet:
            lines.append(f"{len(remaining)} finding(s) left:")
        for finding in remaining:
            lines.extend(finding_lines(finding) if full or verbose else [short_line(finding)])
    if verbose:
        for note in report.notes:
            lines.extend(finding_lines(note))
        lines.extend(context_lines(report))
    lines.extend(error_lines(report))
    if quiet:
        return "\n".join(lines)
    preview = "" if report.written else " (preview: nothing written)"
    lines.append(f"{len(report.fixed)} {'fixed' if report.written else 'to fix'}, {len(remaining)} remaining, {len(report.errors)} error(s){preview}")
    return "\n".join(lines)


def unified_diff(changes: list[FileChange]) -> str:
    def text(data: bytes) -> list[str]:
        return split_lines(data.decode("utf-8", "replace").replace("\r\n", "\n"), keepends=True)

    out: list[str] = []
    for change in changes:
        name = relative(change.path)
        out.extend(difflib.unified_diff(text(change.before), text(change.after), f"a/{name}", f"b/{name}"))
    return "".join(out)
