"""`--statistics`: how many findings each rule has, how many of them are fixable (and fixed)."""

from __future__ import annotations

from ..findings import Finding, Report
from ..rules import ALL
from . import fixable_counts


def rows(report: Report, mode: str = "check") -> list[dict]:
    """One row per rule with findings (left, after a fix), in rule order; `fixed` after a fix."""
    left = report.remaining if mode == "fix" else report.findings
    out = []
    for code, rule in ALL.items():
        mine = [f for f in left if f.rule == code]
        fixed = [f for f in report.fixed if f.rule == code]
        if not mine and not fixed:
            continue
        row = {"rule": code, "name": rule.name, "count": len(mine), "fixable": _fixable(mine)}
        if mode == "fix":
            row["fixed"] = len(fixed)
        out.append(row)
    return out


def table(rows: list[dict]) -> str:
    """Right-aligned counts, then code and name, like `ruff --statistics`."""
    numbers = ["count", "fixable"] + (["fixed"] if any("fixed" in r for r in rows) else [])
    header = [*numbers, "rule", "name"]
    body = [[str(r[key]) for key in numbers] + [r["rule"], r["name"]] for r in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = []
    for line in [header, *body]:
        cells = [c.rjust(widths[i]) if i < len(numbers) else c.ljust(widths[i]) for i, c in enumerate(line)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _fixable(findings: list[Finding]) -> int:
    """Safe fixes only, as in the text summary and JSON `summary.fixable`."""
    return fixable_counts(findings)[0]
