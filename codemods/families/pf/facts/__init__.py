"""The PF facts of a class: the layers it builds with a `quant_config` and the prefixes it hands
them (`prefixes`), the class's field of `PFClassFacts` (a base of `ClassFacts`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...base import ClassFact, Need
from . import prefixes
from .prefixes import PrefixFacts


@dataclass(kw_only=True)
class PFClassFacts:
    """A class's PF facts; None where the class's text names neither `prefix` nor `quant_config`."""

    prefixes: PrefixFacts | None = None
    """Layers built with a `quant_config`, their `prefix`, dotted f-string prefixes (PF001-PF004)."""


CLASS_FACTS: tuple[ClassFact, ...] = (ClassFact("prefixes", prefixes.wanted, prefixes.prefix_facts),)

NEEDS: tuple[Need, ...] = (
    Need("layers built with a quant_config and the prefixes they get (PF): every class of the checked "
         "files that names one", markers=(prefixes.QUANT_GIVEN, prefixes.DOTTED)),
)
