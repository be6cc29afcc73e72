"""Prefix (PF): quantization methods find a layer by the dotted name it was built with
(`prefix`), so every module handed a `quant_config` must take a `prefix` and pass its layers
their full, dot-joined names."""

from __future__ import annotations

from ..base import Family
from .facts import CLASS_FACTS, NEEDS

FAMILY = Family(
    prefix="PF", title="prefix", package=__name__, contract="prefix", class_facts=CLASS_FACTS, needs=NEEDS,
    files=(b"quant_config=", b"prefix"),
)
