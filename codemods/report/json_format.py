"""Machine-readable output: one JSON object, format version 1."""

from __future__ import annotations

from ..findings import Finding, Report
from . import fixable_counts, relative, relative_text, warning_count

VERSION = 1


def finding(f: Finding) -> dict:
    return {
        "rule": f.rule,
        "name": f.name,
        "path": relative(f.path),
        "line": f.line,
        "column": f.column + 1,
        "class": f.cls,
        "level": f.level,
        "keys": list(f.keys),
        "message": f.message,
        "fix": {"applicability": f.fix.applicability.value, "description": f.fix.description} if f.fix else None,
        "evidence": [{"path": relative(e.path), "line": e.line, "text": e.text} for e in f.evidence],
    }


def document(report: Report, verbose: bool = False) -> dict:
    safe, unsafe = fixable_counts(report.findings)
    doc = {
        "version": VERSION,
        "findings": [finding(f) for f in report.findings],
        "errors": [{"path": relative(e.path), "message": e.message} for e in report.errors],
        "summary": {
            "files_scanned": report.files_scanned,
            "findings": len(report.findings),
            "warnings": warning_count(report.findings),
            "fixable": safe,
            "unsafe_fixable": unsafe,
        },
    }
    if report.entry_source:
        detail = report.context[0].split(": ", 2)[-1] if report.context else ""
        doc["entries"] = {"source": report.entry_source, "detail": relative_text(detail)}
    if verbose:
        doc["notes"] = [finding(f) for f in report.notes]
        doc["context"] = [relative_text(line) for line in report.context]
        doc["unverified"] = [relative_text(line) for line in report.unverified]
    if report.changes or report.fixed:
        doc["fixed"] = [finding(f) for f in report.fixed]
        doc["files_changed"] = [relative(c.path) for c in report.changes]
        doc["written"] = report.written
    return doc
