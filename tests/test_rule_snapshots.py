"""Every fixture under tests/fixtures/<RULE>/ against its reviewed snapshot in snapshots/<RULE>/.

Each runs with only its own rule selected, unsafe fixes included. A snapshot holds the findings (text output, evidence included) and the diff of the safe fixes.
The fixed source must compile and a second `fix` must change nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contractfix import engine
from contractfix.config import Options
from contractfix.report import text
from tests.conftest import ROOT
from tests.snapshot import assert_snapshot

FIXTURES = ROOT / "tests" / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("*/*") if p.suffix == ".py" or p.is_dir())


def _render(tree: Path, options: Options) -> str:
    checked = engine.check([tree], options)
    fixed = engine.fix([tree], options)
    return "\n".join([
        "# findings",
        text.render(checked, verbose=True),
        "",
        "# fix",
        text.unified_diff(fixed.changes).rstrip("\n"),
        text.render_fix(fixed, full=True),
        "",
    ])


@pytest.mark.parametrize("fixture", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_matches_snapshot(fixture: Path, in_dir: Path, snapshot_update: bool) -> None:
    tree = in_dir / fixture.name
    if fixture.is_dir():
        shutil.copytree(fixture, tree)
    else:
        shutil.copy(fixture, tree)
    options = Options(select=(fixture.parent.name, "PP100"), unsafe_fixes=True, installed_vllm=False)
    actual = _render(tree, options)
    snapshot = ROOT / "snapshots" / fixture.parent.name / f"{fixture.name.removesuffix('.py')}.snap"
    assert_snapshot(snapshot, actual, snapshot_update)

    for path in ([tree] if tree.is_file() else tree.rglob("*.py")):
        compile(path.read_bytes(), str(path), "exec")
    again = engine.fix([tree], options)
    assert again.changes == [], "a second fix changed something"
    assert not [f for f in engine.check([tree], options).findings if f.fix], "fixable finding left"
