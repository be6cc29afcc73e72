"""What `fix` does to a tree with one violation: valid Python, only the violation's lines touched,
the healthy twin byte for byte where the fix is exact, and a fixed point (a second fix is a no-op)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contractfix.findings import Applicability
from tests.property import workspace
from tests.property.modelgen import render
from tests.property.strategies import violated_trees


@given(violated_trees(), st.booleans())
def test_fix_is_valid_local_exact_and_idempotent(case, unsafe: bool) -> None:
    tree, violation = case
    before = render(tree, violation)
    healthy = render(tree)
    with workspace.on_disk(before) as root:
        report = workspace.fix(root, unsafe)
        assert report.errors == [], workspace.describe(report)
        after = workspace.read_back(root, before)
        for rel, text in after.items():
            compile(text, rel, "exec")
        changed = {rel for rel in before if after[rel] != before[rel]}
        assert changed == {str(c.path.relative_to(root)) for c in report.changes}
        if violation.fixable:
            assert changed, f"{violation}: the safe fix was not applied"
        if not violation.fixable and not unsafe:
            assert not changed, f"{violation}: nothing safe to fix, yet {sorted(changed)} changed"
        classes = violation.classes | {tree.families[violation.family].inner}
        for rel in changed:
            spans = workspace.class_spans(before[rel], classes)
            outside = [n for n in workspace.changed_lines(before[rel], after[rel]) if not any(a <= n <= b + 1 for a, b in spans)]
            assert not outside, f"{violation}: {rel} changed outside the violating class at lines {outside}"
        if violation.exact:
            assert after == healthy, f"{violation}: the fix did not restore the healthy twin"

        again = workspace.fix(root, unsafe)
        assert again.changes == [] and again.errors == [], workspace.describe(again)
        left = workspace.check(root, unsafe)
        allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
        fixable = [f for f in left.findings if f.fix and f.fix.applicability in allowed]
        assert fixable == [], workspace.describe(left)
        if violation.fixable:
            assert left.findings == [], workspace.describe(left)
