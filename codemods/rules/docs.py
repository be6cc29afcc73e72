"""Text built from rule metadata: the `rules` table, `explain` pages, the README rule table."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from .base import Rule


def change(rule: Rule) -> str:
    """What turns `before` into `after`, as a unified diff without file headers."""
    lines = difflib.unified_diff(rule.before.splitlines(), rule.after.splitlines(), n=1, lineterm="")
    return "\n".join(line for line in lines if not line.startswith(("---", "+++")))


def _after_label(rule: Rule) -> str:
    return "The fix" if rule.fix else "By hand (no automatic fix)"


def rules_table(rules: Iterable[Rule]) -> str:
    rows = [("code", "name", "fix", "summary")] + [(r.code, r.name, r.fix_label, r.summary) for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < 3 else cell for i, cell in enumerate(row)) for row in rows
    )


def explain_text(rule: Rule) -> str:
    indent = lambda code: "\n".join("    " + line for line in code.rstrip("\n").splitlines())  # noqa: E731
    return (
        f"{rule.code} {rule.name} (fix: {rule.fix_label})\n\n{rule.summary}\n\n{rule.rationale}\n\n"
        f"Before:\n{indent(rule.before)}\n\n{_after_label(rule)}:\n{indent(change(rule))}\n"
    )


def markdown_table(rules: Iterable[Rule]) -> str:
    lines = ["| code | name | fix | what it catches |", "|---|---|---|---|"]
    lines += [f"| {r.code} | `{r.name}` | {r.fix_label} | {r.summary} |" for r in rules]
    return "\n".join(lines)


def markdown_section(rules: Iterable[Rule]) -> str:
    """The README's rule section: the table, then each rule's rationale and before/after."""
    rules = list(rules)
    parts = [markdown_table(rules), ""]
    for r in rules:
        parts += [
            f"### {r.code} `{r.name}` (fix: {r.fix_label})", "", r.rationale, "",
            "Before:", "```python", r.before.rstrip("\n"), "```",
            f"{_after_label(r)}:", "```diff", change(r), "```", "",
        ]
    return "\n".join(parts)
