"""Rules register themselves, share one signature, and their documented examples run (as
Fixit runs its rules' VALID/INVALID cases): `before` is reported by the rule and fixed to
exactly `after`, and `after` is clean."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from contractfix import engine, rules
from contractfix.config import Options
from contractfix.families import FAMILIES
from contractfix.findings import Applicability
from contractfix.rules import ALL, MODULES, RULE_MODULE, Rule
from contractfix.rules.base import ExampleTree
from tests.conftest import ROOT


def test_every_rule_module_is_registered_once() -> None:
    folders = [ROOT / "codemods" / "rules", *(ROOT / "codemods" / "families").glob("*/rules")]
    files = sorted(p.stem for folder in folders for p in folder.glob("*.py") if RULE_MODULE.fullmatch(p.stem))
    assert sorted(m.__name__.rsplit(".", 1)[-1] for m in MODULES) == files
    assert len(ALL) == len(MODULES), "two modules share a rule code"
    for module in MODULES:
        assert module.__name__.rsplit(".", 1)[-1].startswith(module.RULE.code.lower() + "_")
        assert module.RULE.name.replace("-", "_") == module.__name__.rsplit(".", 1)[-1].split("_", 1)[1]


def test_a_family_holds_the_rules_of_its_prefix() -> None:
    """A family's rules are in its folder, and every rule there carries its prefix (PP100, which
    reads the suppressions of every family, is the shared package's own)."""
    for family in FAMILIES:
        held = [m.RULE.code for m in MODULES if m.__name__.startswith(f"{family.package}.")]
        assert held and all(code.startswith(family.prefix) for code in held)
    assert [m.RULE.code for m in MODULES if not m.__name__.startswith("contractfix.families.")] == ["PP100"]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.RULE.code)
def test_every_rule_has_the_common_check_signature(module) -> None:
    signature = inspect.signature(module.check)
    assert list(signature.parameters) == ["ctx"]
    assert signature.parameters["ctx"].annotation in (rules.Context, "Context")
    assert signature.return_annotation in (list, "list[Finding]")


def _example(tmp_path: Path, rule: Rule, source: str) -> Path:
    """`source` written at the example's place in the rule's tree under `tmp_path`, with the files
    that sit beside it; the example's path."""
    tree = rule.tree or ExampleTree("example.py", {})
    for name, text in {**tree.files, tree.example: source}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / tree.example


@pytest.mark.parametrize("rule", ALL.values(), ids=lambda r: r.code)
def test_example_before_is_reported(rule: Rule, tmp_path: Path) -> None:
    path = _example(tmp_path, rule, rule.before)
    report = engine.check([tmp_path], Options(cache=False))
    assert report.errors == []
    assert path in {f.path for f in report.findings if f.rule == rule.code}, report.findings


@pytest.mark.parametrize("rule", ALL.values(), ids=lambda r: r.code)
def test_example_after_is_clean(rule: Rule, tmp_path: Path) -> None:
    _example(tmp_path, rule, rule.after)
    report = engine.check([tmp_path], Options(cache=False))
    assert report.errors == []
    assert rule.code not in {f.rule for f in report.findings}, report.findings


@pytest.mark.parametrize("rule", [r for r in ALL.values() if r.fix], ids=lambda r: r.code)
def test_example_before_is_fixed_to_exactly_after(rule: Rule, tmp_path: Path) -> None:
    """With the fixes its applicability allows (unsafe ones only for an unsafe rule); the files
    beside it are left as they are."""
    path = _example(tmp_path, rule, rule.before)
    options = Options(select=(rule.code,), unsafe_fixes=rule.fix is Applicability.UNSAFE, cache=False)
    report = engine.fix([tmp_path], options)
    assert report.errors == []
    assert path.read_text() == rule.after
    beside = rule.tree.files if rule.tree else {}
    assert {name: (tmp_path / name).read_text() for name in beside} == beside
