"""Which classes the analysis must parse: the kinds of class some rule reads facts of.

The first pass over a module parses its imports, its `if` / `try` blocks and the classes a need
asks for; of every other class it reads only the header (name, place, bases) and leaves the body
for later (`ModuleFacts.pending`), parsed when a `ClassRef` reads its facts. A rule that reads
facts of another kind of class straight from `ModuleFacts.classes` (without a `ClassRef`)
declares a need for it with `declare`, so that its facts are there.
"""

from __future__ import annotations

import hashlib

from .. import families
from ..families.base import Need
from .syntax import IT, IT_CLASS

NEEDS: list[Need] = [
    Need(
        "contract facts: a class without these words has no producer, no method naming "
        "intermediate tensors and no misspelled producer (so its unparsed body hides none)",
        markers=(IT, IT_CLASS, "make_empty", "SupportsPP"),
    ),
    Need("models: subclasses of a models package's class are checked (engine._subjects)", base_packages=("models",)),
]
"""The needs of every run, and those rules declare; each family analyzed for adds its own."""


def declare(need: Need) -> None:
    """Ask for another kind of class to be parsed (part of the facts cache's key)."""
    if need not in NEEDS:
        NEEDS.append(need)


def _in_force() -> list[Need]:
    return [*NEEDS, *families.needs()]


def markers() -> tuple[str, ...]:
    return tuple(dict.fromkeys(m for need in _in_force() for m in need.markers))


def base_packages() -> frozenset[str]:
    return frozenset(p for need in _in_force() for p in need.base_packages)


def digest() -> bytes:
    """Of every need in force and of the families analyzed for: facts read under other needs,
    or for other families, are other facts."""
    active = [family.prefix for family in families.active()]
    return hashlib.sha256(repr([active, *((n.markers, n.base_packages) for n in _in_force())]).encode()).digest()
