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


def check(unused: list[tuple[str, int, str, str]]) -> list[Finding]:
    """`unused`: (path, line, code, line text) of each suppression that matched no finding."""
    return [
        RULE.finding(
            path=path, line=line, column=0, cls="",
            message=f"unused suppression of {code}: nothing to silence here",
            keys=(code,), evidence=(Evidence(Path(path), line, text, "suppression"),),
        )
        for path, line, code, text in unused
    ]
