"""`analysis.reanalyze`: the facts of a rewritten file, the classes before its first changed line
taken from the facts of the text before, are the facts a fresh analysis gives (`fix` re-reads each
rewritten file this way for its re-check)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from contractfix.analysis import analyze_source, complete, reanalyze
from contractfix.cache import dumps
from tests.conftest import ROOT

SOURCES = sorted((ROOT / "tests" / "fixtures").rglob("*.py"))
UNPARSABLE = (SyntaxError, ValueError)


def _facts(text: bytes, path: Path, before: bytes | None = None, earlier: bytes = b""):
    try:
        if before is None:
            found = analyze_source(text, str(path), "pkg.mod")
        else:
            found = reanalyze(text, str(path), "pkg.mod", before, pickle.loads(earlier))
    except UNPARSABLE as error:
        return type(error).__name__
    found.source = b""
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT / "tests" / "fixtures")))
def test_a_rewrite_reread_has_the_facts_of_a_fresh_read(path: Path) -> None:
    """A line inserted at every fifth line of each fixture (and one changed in place), the
    classes before it reused: the facts equal those read from scratch, whatever the line lands
    in (a class, a string, between a decorator and its class, or where it breaks the syntax)."""
    before = path.read_bytes()
    earlier = analyze_source(before, str(path), "pkg.mod")
    for name in list(earlier.pending)[:2]:  # completed in place, as the main process does
        complete(earlier, name)
    blob = dumps(earlier)
    lines = before.splitlines(keepends=True)
    for at in range(0, len(lines) + 1, 5):
        for after in (
            b"".join([*lines[:at], b"# moved\n", *lines[at:]]),
            b"".join([*lines[:at], lines[at].replace(b"self", b"this"), *lines[at + 1:]]) if at < len(lines) else None,
        ):
            if after is not None:
                assert _facts(after, path, before, blob) == _facts(after, path), f"{path.name}: line {at + 1}"


def test_the_classes_before_the_change_are_taken_not_read(monkeypatch) -> None:
    """The reuse is real: a class wholly before the first changed line is not analyzed again."""
    from contractfix.analysis import module as analysis_module

    before = (
        b"from torch import nn\n\n\n"
        b"class First(nn.Module):\n    def forward(self, intermediate_tensors=None):\n        return 1\n\n\n"
        b"class Second(nn.Module):\n    def forward(self, intermediate_tensors=None):\n        return 2\n"
    )
    after = before.replace(b"return 2", b"return 3")
    earlier = pickle.loads(dumps(analyze_source(before, "m.py", "pkg.m")))
    read: list[str] = []
    real = analysis_module.ClassAnalyzer.run
    monkeypatch.setattr(analysis_module.ClassAnalyzer, "run", lambda self: read.append(self.facts.name) or real(self))
    facts = reanalyze(after, "m.py", "pkg.m", before, earlier)
    assert read == ["Second"]
    assert facts.classes["First"] == earlier.classes["First"]
