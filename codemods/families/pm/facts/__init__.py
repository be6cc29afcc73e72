"""The PM facts a class holds (`packed`): its `packed_modules_mapping` as written, what its
methods add to it at run time, and what its loaders stack; and (`fused`) the fused layers it
builds; the class's fields of `PMClassFacts` (a base of `ClassFacts`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...base import ClassFact, Need
from . import fused, packed
from .fused import Built
from .packed import PackedFacts


@dataclass(kw_only=True)
class PMClassFacts:
    """A class's PM facts, by `CLASS_FACTS`' attribute names."""

    packed: PackedFacts | None = None
    """Its packed-modules mapping, run-time changes to it, and stacked params (PM001-PM004);
    None when its text names neither."""
    fused: tuple[Built, ...] | None = None
    """The fused layers it builds and every other assignment to their attributes (PM004); None
    when it builds none."""


CLASS_FACTS: tuple[ClassFact, ...] = (
    ClassFact("packed", packed.wanted, packed.packed_facts),
    ClassFact("fused", fused.wanted, fused.fused_layers),
)

NEEDS: tuple[Need, ...] = (
    Need("packed-modules mappings and the loaders that stack params (PM)", markers=packed.WORDS),
)
