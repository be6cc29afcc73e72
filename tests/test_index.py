"""Where a file is imported from, and under which dotted name (`index.module_of`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix.index import module_of


def _tree(base: Path, files: list[str]) -> None:
    for name in files:
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


@pytest.mark.parametrize(("files", "target", "root", "name"), [
    (["a/__init__.py", "a/b/__init__.py", "a/b/x.py"], "a/b/x.py", "", "a.b.x"),
    # PEP 420: a folder without __init__.py inside a regular package is a portion of it
    (["pkg/__init__.py", "pkg/models/x.py"], "pkg/models/x.py", "", "pkg.models.x"),
    (["pkg/__init__.py", "pkg/a/b/x.py"], "pkg/a/b/x.py", "", "pkg.a.b.x"),
    # no regular package above: the folder is the root
    (["plain/x.py"], "plain/x.py", "plain", "x"),
    # a plain folder above a package is not part of it
    (["top/pkg/__init__.py", "top/pkg/x.py"], "top/pkg/x.py", "top", "pkg.x"),
])
def test_module_of(tmp_path: Path, files: list[str], target: str, root: str, name: str) -> None:
    base = tmp_path / "t"
    _tree(base, files)
    found_root, found_name = module_of(base / target, {})
    assert (found_root, found_name) == ((base / root).resolve(), name)
