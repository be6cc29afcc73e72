"""Every rule, in code order, found by walking this package (as Fixit does): a module named
`ppNNN_<name>.py` holding `RULE` (its metadata) and `check(ctx)` is a rule; nothing else
registers it. A rule with `RULE.checks_suppressions` (PP100) runs after the others' findings are
suppressed (see `codemods.suppress`)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

from .base import Context, Rule

RULE_MODULE = re.compile(r"pp\d{3}_\w+")


def _discover() -> tuple[ModuleType, ...]:
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if RULE_MODULE.fullmatch(m.name))
    modules = tuple(importlib.import_module(f"{__name__}.{name}") for name in names)
    return tuple(sorted(modules, key=lambda m: m.RULE.code))


MODULES: tuple[ModuleType, ...] = _discover()
ALL: dict[str, Rule] = {m.RULE.code: m.RULE for m in MODULES}

__all__ = ["ALL", "MODULES", "Context", "Rule"]
