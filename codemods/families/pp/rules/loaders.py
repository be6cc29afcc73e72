"""The weight loaders a model's `load_weights` reaches, and the lookups in them that no skip covers
(PP008). Calls are followed, not names: a helper of the model (`self._load(...)`, a closure), and
any method it calls on a submodule (a tower's `load_weight(...)`), which runs on that submodule."""

from __future__ import annotations

from dataclasses import dataclass

from ....index import ClassRef
from ....rules.base import Context
from ..facts.loading import Loader, LoaderCall, Lookup

ENTRY = "load_weights"

Key = tuple[tuple[str, str], str]
"""(the class of the instance a loader runs on, the loader's name)."""


@dataclass(frozen=True)
class Reached:
    """A loader that runs on an instance of `obj` (the model, or a submodule of it), defined by
    `owner` (a class of `obj`'s MRO); `via` is the call that first reached it on a submodule
    (`self.encoder.load_weight`), empty for the model's own loaders."""

    obj: ClassRef
    owner: ClassRef
    loader: Loader
    via: str


def reached(ctx: Context, ref: ClassRef) -> dict[Key, Reached]:
    """Every loader `ref.load_weights` reaches. A submodule's own `load_weights` is not followed:
    it is checked as the entry it is (`AutoWeightsLoader` calls it too)."""
    found: dict[Key, Reached] = {}
    pending: list[tuple[ClassRef, str, str]] = [(ref, ENTRY, "")]
    while pending:
        obj, name, via = pending.pop()
        if (obj.key, name) in found:
            continue
        defined = _loader(ctx, obj, name)
        if defined is None:
            continue
        found[(obj.key, name)] = Reached(obj, defined[0], defined[1], via)
        for call in defined[1].calls:
            pending.extend((target, call.target, via or _label(call)) for target in _objects(ctx, obj, call))
    return found


def unguarded(ctx: Context, loaders: dict[Key, Reached], ref: ClassRef) -> list[tuple[Reached, Lookup]]:
    """The lookups of `loaders` that no skip dominates, in them or at every call that reaches them
    from `ref.load_weights`."""
    covered = {key: key != (ref.key, ENTRY) for key in loaders}
    changed = True
    while changed:
        changed = False
        for key, each in loaders.items():
            if covered[key]:
                continue
            for call in each.loader.calls:
                for target in _objects(ctx, each.obj, call):
                    callee = (target.key, call.target)
                    if covered.get(callee) and not call.guarded:
                        covered[callee] = False
                        changed = True
    return [(each, lookup) for key, each in loaders.items() if not covered[key] for lookup in each.loader.lookups]


def _objects(ctx: Context, obj: ClassRef, call: LoaderCall) -> list[ClassRef]:
    """The classes of the instances a call of a loader of `obj` runs a method of."""
    if not call.via:
        return [obj]
    if call.target == ENTRY:
        return []
    classes = ctx.resolver.object_classes(obj, call.via)
    return classes if isinstance(classes, list) else []


def _label(call: LoaderCall) -> str:
    return ".".join((*call.via, call.target)) if call.via else ""


def _loader(ctx: Context, ref: ClassRef, name: str) -> tuple[ClassRef, Loader] | None:
    """The loader `name` as `ref` resolves it: the first class in the MRO defining the method."""
    method = name.split(".")[0]
    for node in ctx.index.mro(ref):
        if node.defines(method):
            found = node.cls.loading.loaders.get(name) if node.cls.loading else None
            return (node, found) if found else None
    return None
