"""Rules register themselves, share one signature, and their documented examples run (as
Fixit runs its rules' VALID/INVALID cases): `before` is reported by the rule and fixed to
exactly `after`, and `after` is clean."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from contractfix import engine, rules
from contractfix.config import Options
from contractfix.findings import Applicability
from contractfix.rules import ALL, MODULES, Rule
from tests.conftest import ROOT


def test_every_rule_module_is_registered_once() -> None:
    files = sorted(p.stem for p in (ROOT / "codemods" / "rules").glob("pp*.py"))
    assert sorted(m.__name__.rsplit(".", 1)[-1] for m in MODULES) == files
    assert len(ALL) == len(MODULES), "two modules share a rule code"
    for module in MODULES:
        assert module.__name__.rsplit(".", 1)[-1].startswith(module.RULE.code.lower() + "_")
        assert module.RULE.name.replace("-", "_") == module.__name__.rsplit(".", 1)[-1].split("_", 1)[1]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.RULE.code)
def test_every_rule_has_the_common_check_signature(module) -> None:
    signature = inspect.signature(module.check)
    assert list(signature.parameters) == ["ctx"]
    assert signature.parameters["ctx"].annotation in (rules.Context, "Context")
    assert signature.return_annotation in (list, "list[Finding]")


NEEDS_A_TREE = {
    "PP010": "a drafter is known from the registry and config/speculative.py of a vLLM tree",
    "PP011": "the decoder's model must be registered as SupportsPP and SupportsEagle3",
}
"""Rules whose example is an excerpt: what they report depends on files beside the example."""


def _runnable(rules):
    return [pytest.param(r, marks=pytest.mark.skip(reason=NEEDS_A_TREE[r.code])) if r.code in NEEDS_A_TREE else r
            for r in rules]


def _example(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "example.py"
    path.write_text(source)
    return path


@pytest.mark.parametrize("rule", _runnable(ALL.values()), ids=lambda r: r.code)
def test_example_before_is_reported(rule: Rule, tmp_path: Path) -> None:
    report = engine.check([_example(tmp_path, rule.before)], Options(cache=False))
    assert report.errors == []
    assert rule.code in {f.rule for f in report.findings}, report.findings


@pytest.mark.parametrize("rule", _runnable(ALL.values()), ids=lambda r: r.code)
def test_example_after_is_clean(rule: Rule, tmp_path: Path) -> None:
    report = engine.check([_example(tmp_path, rule.after)], Options(cache=False))
    assert report.errors == []
    assert rule.code not in {f.rule for f in report.findings}, report.findings


@pytest.mark.parametrize("rule", _runnable(r for r in ALL.values() if r.fix), ids=lambda r: r.code)
def test_example_before_is_fixed_to_exactly_after(rule: Rule, tmp_path: Path) -> None:
    """With the fixes its applicability allows (unsafe ones only for an unsafe rule)."""
    path = _example(tmp_path, rule.before)
    options = Options(select=(rule.code,), unsafe_fixes=rule.fix is Applicability.UNSAFE, cache=False)
    report = engine.fix([path], options)
    assert report.errors == []
    assert path.read_text() == rule.after
