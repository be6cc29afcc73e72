"""Rule families, one folder each. A family's folder holds everything of its contract:

- `__init__.py`: its `Family` (code prefix, the class facts it reads, the classes it needs parsed,
  the files it needs read);
- `facts/`: the facts its rules read, each module with a text test and a reader;
- `rules/`: one `<prefix>NNN_<name>.py` per rule (metadata, example, check), found by walking it;
- `edits.py` and `fixes/`: its kinds of edit and one transformer per kind (`fixes.TRANSFORMERS`);
- `RUNTIME.md`: the runtime facts its rules rest on.

The shared engine (discover, parse, resolve, apply, verify, report) is outside and reaches each
family through `FAMILIES` alone, so adding a rule touches the family's folder, its fixtures and its
snapshots, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .base import ClassFact, Family, Need
from .pf import FAMILY as PF
from .pm import FAMILY as PM
from .pp import FAMILY as PP

FAMILIES: tuple[Family, ...] = (PP, PF, PM)
_active: tuple[Family, ...] = FAMILIES


@contextmanager
def only(families: tuple[Family, ...]) -> Iterator[None]:
    """Analyze for `families` alone inside this block (a run whose selected rules are theirs):
    the files, classes and facts the others ask for are neither read nor parsed. Worker
    processes forked inside inherit it; outside, every family is analyzed for."""
    global _active
    previous, _active = _active, families
    try:
        yield
    finally:
        _active = previous


def active() -> tuple[Family, ...]:
    return _active


def class_facts() -> tuple[ClassFact, ...]:
    return tuple(fact for family in _active for fact in family.class_facts)


def needs() -> tuple[Need, ...]:
    return tuple(need for family in _active for need in family.needs)


def files() -> tuple[tuple[bytes, ...], ...]:
    return tuple(family.files for family in _active if family.files)


def family_of(code: str) -> Family:
    """The family a rule code belongs to (its two-letter prefix)."""
    return next(family for family in FAMILIES if code.startswith(family.prefix))


__all__ = ["FAMILIES", "ClassFact", "Family", "Need", "active", "class_facts", "family_of", "files", "needs", "only"]
