"""Packed modules (PM): a model's `packed_modules_mapping` says exactly which checkpoint names
each fused layer was stacked from, as its loader's `stacked_params_mapping` stacks them; LoRA
and the quantization ignore lists expand a fused layer through it."""

from __future__ import annotations

from ..base import Family
from .facts import CLASS_FACTS, NEEDS

FAMILY = Family(
    prefix="PM", title="packed modules", package=__name__, contract="packed-modules", class_facts=CLASS_FACTS, needs=NEEDS,
    files=(b"packed_modules_mapping =",),
)
