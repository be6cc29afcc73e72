"""The PF facts of a class: the layers it builds with a `quant_config` and the prefixes it hands
them (`prefixes`), the names it gives the modules of its attributes and its weights mapper's
renames (`tails`); the class's fields of `PFClassFacts` (a base of `ClassFacts`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...base import ClassFact, Need
from . import names, prefixes
from .names import NameFacts
from .prefixes import PrefixFacts


@dataclass(kw_only=True)
class PFClassFacts:
    """A class's PF facts; None where the class's text names neither `prefix` nor `quant_config`."""

    prefixes: PrefixFacts | None = None
    """Layers built with a `quant_config`, their `prefix`, dotted f-string prefixes (PF001-PF003)."""
    tails: NameFacts | None = None
    """The prefix tails of the modules its attributes hold, its weights mapper's renames (PF004)."""


CLASS_FACTS: tuple[ClassFact, ...] = (
    ClassFact("prefixes", prefixes.wanted, prefixes.prefix_facts),
    ClassFact("tails", names.wanted, names.name_facts),
)

NEEDS: tuple[Need, ...] = (
    Need("layers built with a quant_config and the prefixes they get (PF): every class of the checked "
         "files that names one", markers=(prefixes.QUANT_GIVEN, prefixes.DOTTED)),
    Need("the prefix tails of the modules a class builds and the renames of its weights mapper (PF004)",
         markers=(names.MAYBE, names.MAPPER)),
)
