"""`# contractfix: ignore[PP00X]` comments on the reported line or the class line."""

from __future__ import annotations

from .config import Options
from .facts import ModuleFacts
from .findings import Finding
from .index import Index
from .rules.base import Suppression


def apply_suppressions(
    findings: list[Finding], index: Index, targets: list[ModuleFacts], options: Options
) -> tuple[list[Finding], list[Suppression]]:
    """The findings not suppressed, and the suppressions (of selected rules) that matched none."""
    kept, used = [], set()
    for finding in findings:
        module = index.by_path.get(str(finding.path))
        lines = [finding.line]
        cls = module.classes.get(finding.cls) if module else None
        if cls is not None:
            lines.append(cls.line)
        hit = next((line for line in lines if module and finding.rule in module.suppressions.get(line, ())), None)
        if hit is None:
            kept.append(finding)
        else:
            used.add((module.path, hit, finding.rule))
    unused = [
        Suppression(m.path, line, code)
        for m in targets
        for line, codes in sorted(m.suppressions.items())
        for code in codes
        if options.wants(code) and (m.path, line, code) not in used
    ]
    return kept, unused
