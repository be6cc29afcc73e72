"""What a family hands the shared engine: the facts it reads from a class as the file is parsed,
and the kinds of class the parse must not leave unread for them."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

Guard = tuple[tuple[str, bool], ...]
"""Conjunction of configuration conditions: (normalized condition source, polarity). Here, with
what every family shares, so that a family's facts can name it without importing `facts`, which
imports them."""


@dataclass(frozen=True)
class Need:
    """Classes to parse: those whose block holds one of `markers`, and those with a base imported
    from a module whose dotted name has a part in `base_packages`."""

    reason: str
    markers: tuple[str, ...] = ()
    base_packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassFact:
    """`ClassFacts.<attribute>` is `read(class node, module lines)` for a class whose text
    `wanted` accepts (a cheap text test that spares the walk), else left at its default."""

    attribute: str
    wanted: Callable[[str], bool]
    read: Callable[[ast.ClassDef, list[str]], object]


@dataclass(frozen=True)
class Family:
    """A family of rules: its code prefix, its package (`rules/` and `fixes/` are found under it),
    and what its rules need the parse to read."""

    prefix: str
    title: str
    package: str
    contract: str = ""
    """The contract, as a commit title and a PR body say it: "Fix 2 <contract> contract violations"."""
    class_facts: tuple[ClassFact, ...] = ()
    needs: tuple[Need, ...] = ()
    files: tuple[bytes, ...] = ()
    """Byte strings that together mark a file its rules can report in (one the engine would
    otherwise skip as outside the pipeline-parallel contract); empty: no file beyond those."""
