"""Pipeline parallelism (PP): what `make_empty_intermediate_tensors` allocates, what a non-last rank
sends and what a non-first rank reads agree, and everything around that hand-over (entries,
wrappers, weight loading on ranks without a layer, tied heads, drafters, aux hidden states)."""

from __future__ import annotations

from ..base import Family
from .facts import CLASS_FACTS, NEEDS

FAMILY = Family(
    prefix="PP", title="pipeline parallelism", package=__name__, contract="pipeline-parallel", class_facts=CLASS_FACTS, needs=NEEDS,
)
