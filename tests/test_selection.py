"""A run analyzes for the families of its selected rules alone (`families.only`): `--select PP`
reads no PF or PM facts, and each family's findings are the same alone as beside the others."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from contractfix import engine, families
from contractfix.config import Options
from contractfix.families import ClassFact
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"


def _boom(node, lines):
    raise AssertionError("a PF fact was read")


@pytest.fixture
def pf_reads_raise(monkeypatch, tmp_path: Path) -> None:
    """PF's class facts replaced by one that raises when read."""
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    raising = dataclasses.replace(families.PF, class_facts=(ClassFact("prefixes", lambda text: True, _boom),))
    chosen = tuple(raising if f is families.PF else f for f in families.FAMILIES)
    monkeypatch.setattr(families, "FAMILIES", chosen)
    monkeypatch.setattr(families, "_active", chosen)
    monkeypatch.setattr(engine, "FAMILIES", chosen)


def test_a_run_of_other_families_reads_none_of_a_familys_facts(pf_reads_raise) -> None:
    tree = FIXTURES / "PF001"
    engine.check([tree], Options(select=("PP", "PM")))
    with pytest.raises(AssertionError, match="a PF fact was read"):
        engine.check([tree], Options(select=("PF",)))


def test_outside_a_run_every_family_is_analyzed_for() -> None:
    with families.only(()):
        assert families.class_facts() == ()
    assert {fact.attribute for fact in families.class_facts()} >= {"prefixes", "packed", "loading"}


@pytest.mark.parametrize("tree", sorted(p for p in FIXTURES.glob("*/*") if p.is_dir()), ids=lambda p: p.name)
def test_each_familys_findings_are_the_same_alone(tree: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    every = engine.check([tree], Options(select=("ALL",))).findings
    for family in families.FAMILIES:
        alone = engine.check([tree], Options(select=(family.prefix,))).findings
        assert alone == [f for f in every if f.rule.startswith(family.prefix)], family.prefix


def test_facts_cached_for_one_family_never_stand_in_for_every_familys(tmp_path: Path, monkeypatch) -> None:
    """The facts cache keys facts by the families they were read for: a run of PP alone leaves
    facts without PF's, which a later run of every family must not take."""
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    tree = FIXTURES / "PF001"
    assert not [f for f in engine.check([tree], Options(select=("PP",))).findings if f.rule.startswith("PF")]
    assert [f for f in engine.check([tree], Options()).findings if f.rule.startswith("PF")]
