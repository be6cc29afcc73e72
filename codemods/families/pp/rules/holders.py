"""Which models can hold a class: the runtime gates a rule's defect behind the interfaces of the
model that builds it (PP>1 needs SupportsPP, EAGLE-3 needs SupportsEagle3)."""

from __future__ import annotations

from ....index import ClassRef
from ....rules.base import Context


def held_by(ctx: Context, ref: ClassRef, depth: int, *interfaces: str, entries: bool = False) -> bool:
    """Whether a model declaring every one of `interfaces` can hold `ref`: its module defines one
    (a wrapper may build it through a helper such as `_init_model`, which the index cannot
    follow), or a subject whose module imports `ref`'s name holds it through its submodules
    (`depth` levels down). With `entries`, and a registry, only registered architectures count
    as holders (the runtime asks the top-level model, as `supports_eagle3` does)."""
    def declares(holder: ClassRef) -> bool:
        names = ctx.index.base_names(holder)
        return all(name in names for name in interfaces)

    candidates = list(ctx.entries) if entries and ctx.registry_found else list(ctx.subjects)
    local = [ClassRef(ref.module, cls) for cls in ref.module.classes.values()]
    if entries and ctx.registry_found:
        known = set(candidates)
        local = [c for c in local if c in known]
    if any(declares(holder) for holder in local):
        return True
    reached: set[tuple[str, str]] = set()
    for holder in candidates:
        if ref.cls.name in holder.module.imports and declares(holder):
            reach(ctx, holder, reached, depth)
    return ref.key in reached


def reach(ctx: Context, ref: ClassRef, reached: set[tuple[str, str]], depth: int) -> None:
    if ref.key in reached:
        return
    reached.add(ref.key)
    if depth == 0:
        return
    attrs = {attr for node in ctx.index.mro(ref) for attr in node.cls.submodules}
    for attr in sorted(attrs):
        classes = ctx.resolver.object_classes(ref, ("self", attr))
        for sub in classes if isinstance(classes, list) else ():
            reach(ctx, sub, reached, depth - 1)
