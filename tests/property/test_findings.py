"""No false positives on trees that keep the contract; exactly one finding per broken factory list,
of the right rule on the right class, on trees that break it once."""

from __future__ import annotations

from hypothesis import given

from contractfix.findings import Applicability
from tests.property import workspace
from tests.property.modelgen import render
from tests.property.strategies import trees, violated_trees


@given(trees())
def test_contract_holding_tree_has_no_finding_and_is_never_rewritten(tree) -> None:
    files = render(tree)
    with workspace.on_disk(files) as root:
        report = workspace.check(root)
        assert report.findings == [] and report.notes == [] and report.errors == [], workspace.describe(report)
        fixed = workspace.fix(root, unsafe=True)
        assert fixed.changes == [] and fixed.errors == []
        assert workspace.read_back(root, files) == files


@given(violated_trees())
def test_one_violation_gives_exactly_that_rule_on_that_class(case) -> None:
    tree, violation = case
    with workspace.on_disk(render(tree, violation)) as root:
        report = workspace.check(root)
    assert report.errors == [], workspace.describe(report)
    expected = [(violation.rule, True)] * violation.sites
    assert [(f.rule, f.cls in violation.classes) for f in report.findings] == expected, (
        f"{violation}\n{workspace.describe(report)}"
    )
    safe = [f.fix is not None and f.fix.applicability is Applicability.SAFE for f in report.findings]
    assert safe == [violation.fixable] * violation.sites, f"{violation}\n{workspace.describe(report)}"
