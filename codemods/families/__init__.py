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

from .base import ClassFact, Family, Need
from .pf import FAMILY as PF
from .pm import FAMILY as PM
from .pp import FAMILY as PP

FAMILIES: tuple[Family, ...] = (PP, PF, PM)
CLASS_FACTS: tuple[ClassFact, ...] = tuple(fact for family in FAMILIES for fact in family.class_facts)
NEEDS: tuple[Need, ...] = tuple(need for family in FAMILIES for need in family.needs)
FILES: tuple[tuple[bytes, ...], ...] = tuple(family.files for family in FAMILIES if family.files)



def family_of(code: str) -> Family:
    """The family a rule code belongs to (its two-letter prefix)."""
    return next(family for family in FAMILIES if code.startswith(family.prefix))


__all__ = ["CLASS_FACTS", "FAMILIES", "FILES", "NEEDS", "ClassFact", "Family", "Need", "family_of"]
