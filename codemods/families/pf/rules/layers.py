"""What the PF rules share: which constructions take a prefix that a quantization method reads,
which classes can be the top level (built with `prefix=""`), and the file's way of writing a
prefix."""

from __future__ import annotations

from collections.abc import Mapping

from ....facts import ClassFacts, ModuleFacts
from ....index import ClassRef
from ....rules.base import Context
from ..facts.prefixes import Build, PrefixFacts

LAYERS = frozenset({
    "ColumnParallelLinear", "RowParallelLinear", "ReplicatedLinear", "QKVParallelLinear", "MergedColumnParallelLinear",
    "MergedReplicatedLinear", "QKVCrossParallelLinear", "VocabParallelEmbedding", "ParallelLMHead", "FusedMoE",
    "SharedFusedMoE", "Attention", "MLAAttention", "MultiHeadAttention", "EncoderOnlyAttention",
    "CrossAttention", "ChunkedLocalAttention", "StaticSinkAttention",
})
"""vLLM's layers that hand `quant_config.get_quant_method(self, prefix)` their prefix (linear,
embedding and MoE layers; attention for its KV-cache scales). Each takes `prefix` after
`quant_config`, so a call handing `quant_config` by name cannot hand `prefix` by place."""

EMPTY = ('""', "''")


def facts(ref: ClassRef) -> PrefixFacts | None:
    return ref.cls.prefixes if ref.may_hold("prefix|quant_config") else None


def init_owner(ctx: Context, ref: ClassRef) -> ClassRef | None:
    """The class of `ref`'s MRO whose `__init__` builds an instance of `ref`."""
    return next((r for r in ctx.index.mro(ref) if r.defines("__init__")), None)


def takes_prefix(ctx: Context, module: ModuleFacts, build: Build) -> bool | None:
    """Whether the callee of `build` is a layer or module that names its layers by a `prefix`
    it is not handed here: True, False (it takes none, or gets one by place), None (not known:
    a function, a class outside the index)."""
    if build.ctor.rsplit(".", 1)[-1] in LAYERS:
        return True
    for ref in ctx.index.resolve(module, build.ctor):
        owner = init_owner(ctx, ref)
        found = facts(owner) if owner else None
        if found is None or found.init != "param":
            return False
        params = owner.cls.init_params  # type: ignore[union-attr]
        return "prefix" not in params or params.index("prefix") >= build.positional
    return None


def missing(build: Build) -> bool:
    """The build hands no usable prefix: none, or an empty string."""
    return not build.spread and (build.prefix is None or build.prefix in EMPTY)


def top_level(ctx: Context) -> dict[tuple[str, str], str]:
    """Class key -> the entry or drafter it runs as (with `prefix=""`): the registered classes of
    the checked files (also those another model builds as a stage), the entries and drafters, the base whose `__init__` they run with their own prefix, and the modules they hand it to
    unchanged, followed as far as they go."""
    found: dict[tuple[str, str], str] = {}
    todo = [(ref, ref.cls.name) for ref in ctx.entries + ctx.drafts + _registered(ctx)]
    while todo:
        ref, top = todo.pop()
        if ref.key in found:
            continue
        found[ref.key] = top
        owner = init_owner(ctx, ref)
        if owner is None:
            continue
        if owner != ref:
            todo.append((owner, top))
        own = facts(owner)
        for callee in own.passes if own else ():
            if callee == "super":
                chain = ctx.index.mro(owner)[1:]
                base = next((r for r in chain if r.defines("__init__")), None)
                todo.extend([(base, top)] if base else [])
            else:
                todo.extend((r, top) for r in ctx.index.resolve(owner.module, callee))
    return found


def _registered(ctx: Context) -> list[ClassRef]:
    """The classes of the checked files that the registry names."""
    modules = {ctx.index.by_path[path].module for path in ctx.targets if path in ctx.index.by_path}
    return [
        ref for module, name in ctx.resolver.architectures.values() if module in modules
        for ref in ctx.index.lookup(module, name)
    ]


def idiom(module: ModuleFacts, cls: ClassFacts, tops: Mapping[tuple[str, str], str]) -> str:
    """"maybe" when the class (else the file's classes that are never the top level) writes
    `maybe_prefix(prefix, ...)` more often than `f"{prefix}...."`, else "fstring": vLLM keeps
    `maybe_prefix` for the classes built with an empty prefix."""
    inner = [c for c in module.classes.values() if (module.path, c.name) not in tops]
    for scope in ([cls], inner):
        maybe = sum(c.prefixes.maybe for c in scope if c.prefixes)
        fstring = sum(c.prefixes.fstring for c in scope if c.prefixes)
        if maybe != fstring:
            return "maybe" if maybe > fstring else "fstring"
    return "fstring"


def prefix_value(style: str, name: str, holder: str = "prefix") -> str:
    """The prefix of a layer `name` in `style`, from the prefix `holder` holds (a parameter, or
    the attribute the class keeps it in)."""
    return f'maybe_prefix({holder}, "{name}")' if style == "maybe" else f'f"{{{holder}}}.{name}"'


def holder(facts: PrefixFacts, build: Build) -> str:
    """What holds the class's prefix where `build` is made: its method's `prefix` parameter, else
    the attribute `__init__` keeps it in (`self.prefix`, for a helper method that builds layers,
    as MiniCPM's `_init_ffn_block`); "" where neither does."""
    if build.method in facts.scopes:
        return "prefix"
    return f"self.{facts.stored}" if facts.stored and build.attr else ""


def utils_module(module: ModuleFacts) -> str:
    """Where `maybe_prefix` is imported from, as vLLM's model files write it."""
    parent = module.module.rpartition(".")[0]
    return ".utils" if parent.endswith("vllm.model_executor.models") else "vllm.model_executor.models.utils"
