"""`# contractfix: ignore[PP00X]` comments on the reported line or the class line, and
`per-file-ignores`.

As ruff's RUF100: with PP100 selected, a suppression is unused when it silenced nothing, when its
rule is not selected (`--select PP100` alone lists every suppression) or when its code is unknown.
"""

from __future__ import annotations

import re
from pathlib import Path

from .config import Options
from .facts import ModuleFacts
from .findings import Finding
from .index import Index
from .rules import ALL, pp100_unused_suppression


def apply_suppressions(
    findings: list[Finding], index: Index, targets: list[ModuleFacts], options: Options
) -> list[Finding]:
    """Drop suppressed findings and those per-file-ignores skip; add a PP100 finding for each
    suppression that matched none."""
    kept, used = [], set()
    for finding in findings:
        if not options.wants_in(finding.rule, Path(finding.path)):
            continue
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
    code = pp100_unused_suppression.RULE.code
    unused = [
        (m.path, line, listed, _line(m.path, line), _why(listed, options))
        for m in targets
        if options.wants_in(code, Path(m.path))
        for line, codes in sorted(m.suppressions.items())
        for listed in codes
        if (m.path, line, listed) not in used
    ]
    kept.extend(pp100_unused_suppression.check(unused))
    return kept


def _why(code: str, options: Options) -> str:
    if code not in ALL:
        return "unknown"
    return "unmatched" if options.wants(code) else "non-enabled"


def _line(path: str, number: int) -> str:
    """Line `number` as Python's tokenizer numbers lines (only \\r\\n, \\r and \\n end one)."""
    try:
        lines = re.split(r"\r\n|\r|\n", Path(path).read_bytes().decode("utf-8", "replace"))
    except OSError:
        return ""
    return lines[number - 1].strip() if number <= len(lines) else ""
