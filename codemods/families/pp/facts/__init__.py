"""The PP facts a class holds beyond the key traffic that the shared parse reads
(`analysis.traffic`): each module has a text test (`wanted`) and a reader, whose result is the
class's field of `PPClassFacts` (a base of `ClassFacts`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...base import ClassFact, Need
from . import auxstates, keyguards, layerloops, loading, nonevalues, rankuse, ties, unbuilt
from .auxstates import AuxFacts
from .keyguards import KeyGuard
from .layerloops import LoopFacts
from .loading import LoadingFacts
from .nonevalues import ValueFacts
from .ties import TieFacts
from .unbuilt import UnbuiltFacts


@dataclass(kw_only=True)
class PPClassFacts:
    """A class's PP facts, by `CLASS_FACTS`' attribute names; each is its default where the class's
    text cannot hold it."""

    loading: LoadingFacts | None = None
    """Weight-loader lookups and layer splits (PP008); None when the class has neither."""
    aux: AuxFacts | None = None
    """Its aux-hidden-states-over-PP flag and forward (PP011); None when it has neither."""
    first_rank_tests: tuple[tuple[int, int], ...] = ()
    """(line, column) of each `is_first_rank` read (PP010)."""
    values: ValueFacts | None = None
    """Sent values that may be None, None returned by its forward, layer lists it builds (PP012)."""
    ties: TieFacts | None = None
    """Its head-to-embedding ties and `PPMissingLayer` placeholders (PP009); None when it has neither."""
    unbuilt: UnbuiltFacts | None = None
    """Modules a rank test leaves unbuilt, and the `AutoWeightsLoader` of its loader (PP013)."""
    layer_loops: LoopFacts | None = None
    """Loops over every entry of a layer list that read the entries' attributes (PP014)."""
    key_guards: tuple[KeyGuard, ...] = ()
    """Reads of a received key guarded by a local only the first rank sets (PP015)."""


CLASS_FACTS: tuple[ClassFact, ...] = (
    ClassFact("loading", loading.wanted, loading.loading_facts),
    ClassFact("aux", auxstates.wanted, auxstates.aux_facts),
    ClassFact("first_rank_tests", rankuse.wanted, rankuse.first_rank_tests),
    ClassFact("values", nonevalues.wanted, nonevalues.value_facts),
    ClassFact("ties", ties.wanted, ties.tie_facts),
    ClassFact("unbuilt", unbuilt.wanted, lambda node, lines: unbuilt.unbuilt_facts(node)),
    ClassFact("layer_loops", layerloops.wanted, layerloops.loop_facts),
    ClassFact("key_guards", keyguards.wanted, keyguards.key_guards),
)

NEEDS: tuple[Need, ...] = (
    Need("weight loaders and layer splits (PP008)", markers=loading.MARKERS),
    Need("first-rank tests (PP010)", markers=(rankuse.WORD,)),
    Need("aux hidden states: a class that sets or packs them; one that inherits the flag "
         "subclasses a models package's class or a class of its own module (both parsed, see "
         "`module._partial`), since a class whose bases are neither cannot reach a setter",
         markers=(auxstates.FLAG, auxstates.PACK)),
    Need("tied heads (PP009): PP009 reads the ties of every class of the checked files; the "
         "placeholders they meet are reached through a ClassRef", markers=(ties.TIE_CALL, "lm_head")),
    Need("modules built on some ranks only (PP013)", markers=unbuilt.WORDS),
    Need("loops over a whole layer list (PP014)", markers=(layerloops.MARKER,)),
)
