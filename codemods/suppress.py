"""`# contractfix: ignore[PP00X]` comments on the reported line or the class line."""

from __future__ import annotations

from .config import Options
from .findings import Finding
from .index import Index


def apply_suppressions(findings: list[Finding], index: Index, options: Options) -> list[Finding]:
    kept = []
    for finding in findings:
        module = index.by_path.get(str(finding.path))
        if module is None:
            kept.append(finding)
            continue
        lines = [finding.line]
        cls = module.classes.get(finding.cls)
        if cls is not None:
            lines.append(cls.line)
        if any(finding.rule in module.suppressions.get(line, ()) for line in lines):
            continue
        kept.append(finding)
    return kept
