"""What a run could not verify, in words, for `--verbose`: bases that resolve to no class (their
producers and forwards are unknown) and key sets that are only partly known."""

from __future__ import annotations

from .index import ClassRef, Index
from .resolve import Resolver


def unresolved_bases(index: Index, packages: frozenset[str], subjects: list[ClassRef]) -> list[str]:
    """Bases of the checked classes that take part in the contract, imported from one of
    `packages` (vLLM's, the checked package's), that resolve to no class here."""
    out: list[str] = []
    for ref in subjects:
        for base in ref.cls.bases:
            origin = index.opaque(ref.module, base, packages)
            if origin is not None:
                out.append(
                    f"{ref.module.path}:{ref.cls.line}: base `{base}` of {ref.cls.name} (from {origin}) resolves to no "
                    "class in the checked tree or extra paths: what it allocates, sends and reads is unknown"
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
