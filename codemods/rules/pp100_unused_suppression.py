"""PP100 unused-suppression: a `# contractfix: ignore[...]` comment that silences nothing."""

from __future__ import annotations

from pathlib import Path

from ..findings import Evidence, Finding
from .base import Rule

RULE = Rule(
    code="PP100",
    name="unused-suppression",
    summary="A `# contractfix: ignore[CODE]` comment that no finding needs.",
    rationale=(
        "Suppressions outlive the code they were written for. One that silences nothing hides the "
        "next real finding of that rule on that line; remove it (like ruff's RUF100)."
    ),
    before="class LlamaModel(nn.Module):  # contractfix: ignore[PP001]\n",
    after="class LlamaModel(nn.Module):\n",
    fix=None,
)


REASONS = {
    "unmatched": "nothing to silence here",
    "non-enabled": "the rule is not selected",
    "unknown": "no such rule",
}


def check(unused: list[tuple[str, int, str, str, str]]) -> list[Finding]:
    """`unused`: (path, line, code, line text, why) of each suppression that matched no finding;
    `why` is a key of `REASONS` (ruff's RUF100 words)."""
    return [
        RULE.finding(
            path=path, line=line, column=0, cls="",
            message=f"unused suppression of {code}: {REASONS[why]}",
            keys=(code,), evidence=(Evidence(Path(path), line, text, "suppression"),),
        )
        for path, line, code, text, why in unused
    ]
