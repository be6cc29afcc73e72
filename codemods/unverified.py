"""What a run could not verify, in words, for `--verbose`: bases that resolve to no class (their
producers and forwards are unknown) and key sets that are only partly known."""

from __future__ import annotations

import re

from .facts import ModuleFacts
from .index import ClassRef, Index
from .resolve import Resolver

INTERFACE = re.compile(r"^(Supports|Has|Is)[A-Z]|Mixin$|Protocol$")


def _interface(name: str, origin: str) -> bool:
    """A marker interface (`SupportsPP`, `HasInnerState`, a mixin): it holds no contract."""
    return bool(INTERFACE.search(name)) or origin.endswith(".interfaces")


def unresolved_bases(index: Index, targets: list[ModuleFacts], subjects: list[ClassRef]) -> list[str]:
    """Bases of the checked classes that take part in the contract, imported from vLLM or from
    the checked package, that resolve to no class here."""
    packages = {m.module.split(".")[0] for m in targets} | {"vllm"}
    out: list[str] = []
    for ref in subjects:
        module = ref.module
        for base in ref.cls.bases:
            head = base.split(".")[0]
            sources = [s for s, _ in module.imports.get(head, ())]
            if not sources or index.resolve(module, base):
                continue
            origin = sources[0]
            if origin.split(".")[0] not in packages or _interface(base.split(".")[-1], origin):
                continue
            out.append(
                f"{module.path}:{ref.cls.line}: base `{base}` of {ref.cls.name} (from {origin}) resolves to no class "
                "in the checked tree or extra paths: what it allocates, sends and reads is unknown"
            )
    return out


NOT_PARTIAL = {"no make_empty_intermediate_tensors", "forward not found"}
"""Reported by the rules themselves (PP004), or nothing to verify."""


def partial_keys(resolver: Resolver, entries: list[ClassRef]) -> list[str]:
    """Entries whose allocated, sent or read keys are only partly known (dynamic keys, a factory
    list that is not a literal, a producer not understood, a submodule built dynamically)."""
    out: list[str] = []
    for ref in entries:
        where = f"{ref.module.path}:{ref.cls.line}: {ref.cls.name}"
        traffic = resolver.traffic(ref)
        for label, side in (("allocated", resolver.allocation(ref).side), ("sent", traffic.sends), ("read", traffic.reads)):
            reasons = [r for r in side.unknown if r not in NOT_PARTIAL]
            reasons += ["dynamic keys"] if any(u.use.key is None for u in side.uses) else []
            if reasons:
                out.append(f"{where}: {label} keys partly unknown ({'; '.join(dict.fromkeys(reasons))})")
    return out
