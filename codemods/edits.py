"""Fix plan steps: the shapes every edit shares, and the kinds of edit that more than one family
can plan (a literal's elements, a statement inserted into a method).

Every edit locates the node it changes by `line` and `column` (1-based line, 0-based column, as
`ast` reports them); its other fields say what to change there. Each family's own kinds, one
frozen dataclass each, live in its `edits.py`, applied by the transformer its `fixes` registers
for the type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Edit:
    path: Path
    line: int
    column: int


@dataclass(frozen=True)
class LiteralEdit(Edit):
    """An edit of the list, tuple or dict literal on `line` whose string elements (dict keys)
    are `existing` (None for an element that is not a string)."""

    existing: tuple[str | None, ...]
    keys: tuple[str, ...]


@dataclass(frozen=True)
class InsertStatement(Edit):
    """An edit that inserts a statement into a method of class `cls`, right after the top-level
    statement of that method that ends on `line`."""

    cls: str
