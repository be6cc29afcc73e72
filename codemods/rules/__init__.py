"""Every rule, in code order, found by walking this package and each family's `rules/` (as Fixit
does): a module named `<prefix>NNN_<name>.py` holding `RULE` (its metadata) and `check(ctx)` is a
rule; nothing else registers it. A rule with `RULE.checks_suppressions` (PP100, here: it reads the
suppressions of every family) runs after the others' findings are suppressed (see
`codemods.suppress`)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

from ..families import FAMILIES
from .base import Context, Rule

RULE_MODULE = re.compile(r"[a-z]{2}\d{3}_\w+")


def _discover() -> tuple[ModuleType, ...]:
    packages = [importlib.import_module(__name__)]
    packages += [importlib.import_module(f"{family.package}.rules") for family in FAMILIES]
    modules = tuple(
        importlib.import_module(f"{package.__name__}.{found.name}")
        for package in packages
        for found in pkgutil.iter_modules(package.__path__)
        if RULE_MODULE.fullmatch(found.name)
    )
    return tuple(sorted(modules, key=lambda m: m.RULE.code))


MODULES: tuple[ModuleType, ...] = _discover()
ALL: dict[str, Rule] = {m.RULE.code: m.RULE for m in MODULES}

__all__ = ["ALL", "MODULES", "Context", "Rule"]
