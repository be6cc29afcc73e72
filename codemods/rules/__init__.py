"""Every rule, in code order. A rule module holds `RULE` (its metadata) and `check(ctx)`."""

from __future__ import annotations

from types import ModuleType

from . import pp001_key_not_allocated, pp002_intermediate_tensors_default
from .base import Context, Rule

MODULES: tuple[ModuleType, ...] = (
    pp001_key_not_allocated,
    pp002_intermediate_tensors_default,
)
ALL: dict[str, Rule] = {m.RULE.code: m.RULE for m in MODULES}

__all__ = ["ALL", "MODULES", "Context", "Rule"]
