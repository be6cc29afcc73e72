"""What a package's module-level `__getattr__` returns (`analysis.lazy`), and the classes a name of
such a package resolves to (`Index.resolve`): every one it can return, on any platform."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from contractfix.analysis import analyze_source
from contractfix.index import Index

TABLE = '''
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from .cuda import M
def __getattr__(name):
    if name in ("M", "D"):
        if is_rocm():
            from .rocm import M, D
        else:
            from .cuda import M, D
        return {"M": M, "D": D}[name]
    raise AttributeError(name)
'''
MODULE_BY_PLATFORM = '''
def __getattr__(name):
    if name == "D":
        from . import draft
        return draft.D
    if is_rocm():
        from . import rocm as impl
    else:
        from . import cuda as impl
    return getattr(impl, name)
'''
TERNARY = '''
from . import cuda, rocm
def __getattr__(name):
    if name not in {"M"}:
        raise AttributeError(name)
    return rocm.M if is_rocm() else cuda.M
'''
ALIAS = '''
import pkg.rocm as r
def __getattr__(attr: str):
    if attr == "OldM":
        return getattr(r, "M")
    raise AttributeError(attr)
'''


def offered(source: str, name: str) -> set[tuple[str, str]]:
    facts = analyze_source(textwrap.dedent(source).encode(), "pkg/__init__.py", "pkg")
    return {(e.module, e.offers(name) or "") for e in facts.lazy if e.offers(name)}


@pytest.mark.parametrize(("source", "name", "expected"), [
    (TABLE, "M", {("pkg.cuda", "M"), ("pkg.rocm", "M")}),
    (TABLE, "D", {("pkg.cuda", "D"), ("pkg.rocm", "D")}),
    (TABLE, "X", set()),
    (MODULE_BY_PLATFORM, "M", {("pkg.cuda", "M"), ("pkg.rocm", "M")}),
    # the branch that served "D" returned: the platform modules never serve it
    (MODULE_BY_PLATFORM, "D", {("pkg.draft", "D")}),
    (TERNARY, "M", {("pkg.cuda", "M"), ("pkg.rocm", "M")}),
    (TERNARY, "D", set()),
    (ALIAS, "OldM", {("pkg.rocm", "M")}),
    (ALIAS, "M", set()),
])
def test_getattr_returns(source: str, name: str, expected: set[tuple[str, str]]) -> None:
    assert offered(source, name) == expected


def test_no_getattr_no_exports() -> None:
    assert analyze_source(b"from .cuda import M\n", "pkg/__init__.py", "pkg").lazy == []


def test_a_name_resolves_to_every_class_getattr_returns(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(TABLE))
    for platform in ("cuda", "rocm"):
        (pkg / f"{platform}.py").write_text("class M:\n    pass\n\n\nclass D:\n    pass\n")
    index = Index([tmp_path])
    assert sorted(Path(ref.module.path).name for ref in index.lookup("pkg", "M")) == ["cuda.py", "rocm.py"]
    assert index.lookup("pkg", "X") == []
