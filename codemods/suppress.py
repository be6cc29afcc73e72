"""`# contractfix: ignore[PP00X]` comments on the reported line or the class line."""

from __future__ import annotations

from pathlib import Path

from .config import Options
from .facts import ModuleFacts
from .findings import Finding
from .index import Index
from .rules import pp100_unused_suppression


def apply_suppressions(
    findings: list[Finding], index: Index, targets: list[ModuleFacts], options: Options
) -> list[Finding]:
    """Drop suppressed findings; add a PP100 finding for each suppression that matched none."""
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
    if options.wants(pp100_unused_suppression.RULE.code):
        unused = [
            (m.path, line, code, _line(m.path, line))
            for m in targets
            for line, codes in sorted(m.suppressions.items())
            for code in codes
            if options.wants(code) and (m.path, line, code) not in used
        ]
        kept.extend(pp100_unused_suppression.check(unused))
    return kept


def _line(path: str, number: int) -> str:
    try:
        lines = Path(path).read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    return lines[number - 1].strip() if number <= len(lines) else ""
