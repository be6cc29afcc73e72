"""`# contractfix: ignore[PP00X]` comments on the reported line or the class line, and
`per-file-ignores`.

As ruff's RUF100: with PP100 selected, a suppression is unused when it silenced nothing, when its
rule is not selected (`--select PP100` alone lists every suppression) or when its code is unknown.
"""

from __future__ import annotations

from pathlib import Path

from .config import Options
from .facts import ModuleFacts
from .findings import Finding
from .index import Index
from .rules.base import Suppression


def apply_suppressions(
    findings: list[Finding], index: Index, targets: list[ModuleFacts], options: Options, known: set[str]
) -> tuple[list[Finding], list[Suppression]]:
    """The findings neither suppressed nor skipped by per-file-ignores, and every suppression that
    matched none (`known`: the codes of all rules, selected or not)."""
    kept, used = [], set()
    for finding in findings:
        if not options.wants_in(finding.rule, Path(finding.path)):
            continue
        module = index.by_path.get(str(finding.path))
        lines = [finding.line]
        cls = module.classes.get(finding.cls) if module else None
        if cls is not None:
            lines.append(cls.line)
        hit = next((n for n in lines if module and finding.rule in module.suppressions.get(n, ())), None)
        if hit is None or module is None:
            kept.append(finding)
        else:
            used.add((module.path, hit, finding.rule))
    unused = [
        Suppression(m.path, line, code, _why(code, options, known))
        for m in targets
        for line, codes in sorted(m.suppressions.items())
        for code in codes
        if (m.path, line, code) not in used
    ]
    return kept, unused


def _why(code: str, options: Options, known: set[str]) -> str:
    if code not in known:
        return "unknown"
    return "unmatched" if options.wants(code) else "non-enabled"
