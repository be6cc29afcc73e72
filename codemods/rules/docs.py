"""Text built from rule metadata: the `rules` table, `explain` pages, the README rule table and
the rule pages under `DOCS`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from .base import Rule

DOCS = "docs/rules"
"""The rule pages' folder, from the repository root (`contractfix rules --docs docs/rules`)."""


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


def markdown_table(rules: Iterable[Rule], pages: str | None = None) -> str:
    """The rule table in Markdown; with `pages`, each code links to its page in that folder."""
    lines = ["| code | name | fix | what it catches |", "|---|---|---|---|"]
    code = (lambda r: f"[{r.code}]({pages}/{r.code}.md)") if pages else (lambda r: r.code)
    lines += [f"| {code(r)} | `{r.name}` | {r.fix_label} | {r.summary} |" for r in rules]
    return "\n".join(lines)


def rule_page(rule: Rule) -> str:
    """A rule's page under `DOCS`: what `explain` prints, in Markdown."""
    return "\n".join([
        f"# {rule.code} `{rule.name}` (fix: {rule.fix_label})", "", rule.summary, "", rule.rationale, "",
        "Before:", "```python", rule.before.rstrip("\n"), "```", "",
        f"{_after_label(rule)}:", "```diff", change(rule), "```", "",
    ])


def index_page(rules: Iterable[Rule]) -> str:
    """`DOCS/README.md`: the table, each code linking to its page."""
    return (
        "# Rules\n\nEach page is made from the rule's own metadata by `contractfix rules --docs docs/rules`,\n"
        "as `contractfix explain CODE` prints it; a test checks that they agree.\n\n"
        + markdown_table(rules, ".") + "\n"
    )


def pages(rules: Iterable[Rule]) -> dict[str, str]:
    """Every file of `DOCS` by name: one page per rule, and the index."""
    rules = list(rules)
    return {"README.md": index_page(rules), **{f"{r.code}.md": rule_page(r) for r in rules}}
