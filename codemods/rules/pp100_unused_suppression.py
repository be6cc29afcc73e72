"""PP100 unused-suppression: a `# contractfix: ignore[...]` comment that silences nothing."""

from __future__ import annotations

from pathlib import Path

from ..findings import Evidence, Finding
from .base import Context, Rule

BEFORE = '''\
class LlamaModel(nn.Module):  # contractfix: ignore[PP001]
    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.layers(input_ids, positions)
'''

AFTER = '''\
class LlamaModel(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.layers(input_ids, positions)
'''

RULE = Rule(
    code="PP100",
    name="unused-suppression",
    summary="A `# contractfix: ignore[CODE]` comment that no finding needs.",
    rationale=(
        "Suppressions outlive the code they were written for. One that silences nothing hides the "
        "next real finding of that rule on that line; remove it (like ruff's RUF100)."
    ),
    before=BEFORE,
    after=AFTER,
    fix=None,
    checks_suppressions=True,
)


REASONS = {
    "unmatched": "nothing to silence here",
    "non-enabled": "the rule is not selected",
    "unknown": "no such rule",
}


def check(ctx: Context) -> list[Finding]:
    """A finding for each suppression that matched no finding of the rule it names."""
    return [
        RULE.finding(
            path=s.path, line=s.line, column=0, cls="",
            message=f"unused suppression of {s.code}: {REASONS[s.why]}",
            keys=(s.code,), evidence=(Evidence(Path(s.path), s.line, ctx.line(s.path, s.line), "suppression"),),
        )
        for s in ctx.unused_suppressions
    ]
