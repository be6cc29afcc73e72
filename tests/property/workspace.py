"""Generated trees on disk: write them, read them back, and run the engine on them."""

from __future__ import annotations

import ast
import contextlib
import difflib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from contractfix import engine
from contractfix.config import Options
from contractfix.findings import Report


@contextlib.contextmanager
def on_disk(files: dict[str, str]) -> Iterator[Path]:
    """The files in a fresh temp folder (bytes written exactly: no newline translation)."""
    with tempfile.TemporaryDirectory(prefix="contractfix-prop-") as temp:
        root = Path(temp)
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
        yield root


def read_back(root: Path, rels) -> dict[str, str]:
    return {rel: (root / rel).read_bytes().decode() for rel in rels}


def check(root: Path, unsafe: bool = False) -> Report:
    return engine.check([root], Options(unsafe_fixes=unsafe, cache=False))


def fix(root: Path, unsafe: bool = False) -> Report:
    return engine.fix([root], Options(unsafe_fixes=unsafe, cache=False))


def describe(report: Report) -> str:
    lines = [f"{f.rule} {f.cls} {Path(f.path).name}:{f.line} {f.message}" for f in report.findings]
    lines += [f"error {Path(e.path).name}: {e.message}" for e in report.errors]
    return "\n".join(lines) or "(nothing)"


def changed_lines(before: str, after: str) -> list[int]:
    """Original line numbers (1-based) that a rewrite replaced or deleted, or inserted before."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    out: list[int] = []
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            out.extend(range(i1 + 1, i2 + 1) if i2 > i1 else [i1 + 1])
    return out


def class_spans(source: str, names: set[str]) -> list[tuple[int, int]]:
    """Line spans of the named top-level classes, plus the import block above the first class."""
    tree = ast.parse(source)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    spans = [(n.lineno, n.end_lineno) for n in classes if n.name in names]
    first = min((n.lineno for n in classes), default=1)
    return spans + [(1, first - 1)]
