"""What the PM rules compare: a class's own `packed_modules_mapping` against what its loaders
stack, resolved as vLLM builds the model.

Only the mappings the runtime reads are checked: a top-level model's (a registered
architecture or drafter: LoRA's `get_packed_modules_mapping` and the loader's
`configure_quant_config` read it) and a `SupportsQuant` class's (its `__new__` merges it into the
quantization config). Without a registry (a plugin, a fork, a lone file) a class that declares
`SupportsLoRA` stands for a top-level model; with one, a base that declares it is not one (Grok's
base, whose registered class merges its subclasses' mappings in `__new__`).

The mapping a class reads is the one attribute lookup finds: its own, else the first base's in
its MRO that assigns one; one written as `Base.packed_modules_mapping | {...}` (or `{**Base...}`)
is the base's entries, then its own. An entry a base writes is reported on the class that reads
it, without a fix (the base's other subclasses read it too), unless the base is itself checked
here and its loaders imply the same (it is reported there).

The loaders are those of the class's MRO and of the submodules it builds (and theirs, a few
levels down, through model classes only: a language model built by architecture, a tower, a
drafter), since LoRA and quantization expand a fused layer by its last name, wherever in the
model it sits. A param two loaders stack from different shards, or by shard ids that cannot be
ordered, implies nothing. Where some submodule cannot be resolved (`partial`), a loader not seen
may stack a param of the same name otherwise: only what the class's own MRO stacks is sure.
A class whose `load_weights` loads every weight itself never runs its submodules' loaders, and
a tower's (`self.visual`, `self.audio_tower`) is left out: LoRA reaches a tower only when
`enable_tower_connector_lora` is set, and a tower's checkpoint may hold its fused layer as is
(Qwen2.5-VL's `"qkv": ["qkv"]`), which a loader that takes both layouts does not tell.
A param counts only where a module of the model builds a layer of its name (`self.<name> =`, in
the files of the loaders, of the class, and of the model modules they import): a loader may
keep stacking a layer its model no longer builds (ChatGLM's `merged_proj`, left from GLM-4V).
A subclass whose own mapping leaves out an entry of its base's, for a layer that only the base
model's files stack, drops it on purpose: it builds other layers (MiniCPM3's MLA attention in
place of MiniCPM's `qkv_proj`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from ....facts import KeyUse, Located, ModuleFacts, Submodule
from ....index import INTERFACE, ClassRef
from ....resolve import NOT_MODULES
from ....rules.base import Context
from ..facts.fused import Built
from ..facts.packed import MAPPING, WORDS, Entry, Mapping

DEPTH = 4
"""Levels of submodules whose loaders count (model -> its inner model -> a language model -> its
inner model: FireRedASR2 builds Qwen2ForCausalLM inside its own model)."""
TOWER = re.compile(r"visual|vision|audio|tower|encoder|vit", re.IGNORECASE)
"""The attribute names of a multimodal model's towers."""
BUILDS = r"self\.\w+\s*(?::[^=\n]*)?=[^=]"
"""Text of a class that can assign a submodule (tested without parsing the class)."""
STACKS = "stacked_params_mapping|orig_to_new_stacked"
"""Text of a class that can stack params."""
QUANT = frozenset({"SupportsQuant"})
"""The interface whose classes' mappings the runtime reads, whatever builds them."""
QKV = {"q": 0, "k": 1, "v": 2}
"""The string shard ids of `QKVParallelLinear.weight_loader`, in the order of its output."""


@dataclass(frozen=True)
class Held:
    """An entry of the mapping a class reads, and the class whose body writes it."""

    entry: Entry
    owner: ClassRef


@dataclass(frozen=True)
class Resolved:
    """The mapping a class reads: `holder` is the class of its MRO whose body assigns it (with
    `written`, that assignment), `held` its entries after every merge."""

    holder: ClassRef
    written: Mapping
    held: tuple[Held, ...]
    complete: bool


@dataclass
class Packing:
    """A class whose mapping the runtime reads, what its MRO changes at run time, and what its
    loaders imply: param -> its shards ordered by shard id (`implied`), with where each was
    stacked. `mapping` is the class's own assignment (None when it inherits the whole mapping)."""

    ref: ClassRef
    mapping: Mapping | None
    held: tuple[Held, ...] = ()
    complete: bool = True
    """Every part of the mapping read (no key, spread or merge left unknown)."""
    lora: bool = False
    """LoRA reads the mapping: a top-level model (without a registry, any class) that declares
    `SupportsLoRA`."""
    runtime: set[str] = field(default_factory=set)
    runtime_unknown: bool = False
    implied: dict[str, tuple[str, ...]] = field(default_factory=dict)
    slices: dict[str, int] = field(default_factory=dict)
    """Param -> the number of slices of the fused output its implied shards cover (more than
    the shards where one spans several)."""
    stacked: dict[str, list[Located]] = field(default_factory=dict)
    opaque: bool = False
    """Some loader's `stacked_params_mapping` is not all literal triples: nothing is implied."""
    partial: bool = False
    """Some submodule of a class whose loader counts could not be resolved."""
    own: set[str] = field(default_factory=set)
    """The params the class's own MRO stacks."""
    lora_modules: tuple[str, ...] | None = None
    """The modules an old runtime's LoRA reaches (`supported_lora_modules`); None: every one."""
    dropped: set[str] = field(default_factory=set)
    """Keys of a base's mapping that the class's own mapping leaves out."""
    local: set[str] = field(default_factory=set)
    """The params stacked by loaders of the class's own module."""
    loaders: list[ClassRef] = field(default_factory=list)
    """The classes whose loaders count (the class's MRO first)."""
    _built: dict[str, bool] = field(default_factory=dict)
    _layers: dict[str, list[tuple[str, Built]]] = field(default_factory=dict)
    _imported: list[ModuleFacts] | None = None

    def built(self, ctx: Context, param: str) -> bool:
        """Whether a module of the model, or a model module one of them imports from, builds a
        layer named `param` as `self.<param> = ...` (asked only of a param a rule would report:
        the modules it imports are read then, and only when its own do not)."""
        if param not in self._built:
            self._built[param] = _found(self.modules(), param) or _found(self.imported(ctx), param)
        return self._built[param]

    def modules(self) -> list[ModuleFacts]:
        """The modules of the class and of the classes whose loaders count."""
        return list({c.module.path: c.module for c in [self.ref, *self.loaders]}.values())

    def imported(self, ctx: Context) -> list[ModuleFacts]:
        """The model modules that `modules` import from (worked out once per class: each param
        a rule asks about reads them)."""
        if self._imported is None:
            self._imported = _imported(ctx, self.modules(), self.ref)
        return self._imported

    @property
    def entries(self) -> list[Entry]:
        return [h.entry for h in self.held]

    def get(self, key: str) -> Entry | None:
        return next((h.entry for h in self.held if h.entry.key == key), None)

    def owner(self, entry: Entry) -> ClassRef:
        return next(h.owner for h in self.held if h.entry is entry)

    def editable(self, ctx: Context, entry: Entry | None = None) -> bool:
        """Whether a fix may write the mapping (`entry`, or a new one): the class's own dict
        literal, in a checked file, with every part known."""
        own = entry is None or self.owner(entry) == self.ref
        return (own and self.mapping is not None and self.mapping.literal and self.complete
                and ctx.editable(self.ref.module.path))

    def site(self, entry: Entry | None = None) -> tuple[int, int]:
        """Where a finding goes: the entry when the class writes it, else the class's own
        assignment, else its header."""
        if entry is not None and self.owner(entry) == self.ref:
            return entry.line, entry.column
        if self.mapping is not None:
            return self.mapping.line, self.mapping.column
        return self.ref.header.line, self.ref.header.column

    def inherited(self, entry: Entry) -> str:
        """", inherited from <Base>," for an entry a base writes, else "" (no parenthesis: the text
        report's headline ends at the first one)."""
        owner = self.owner(entry)
        return "" if owner == self.ref else f", inherited from {owner.header.name},"

    def echoed(self, ctx: Context, entry: Entry | None, param: str) -> bool:
        """Whether a base of this class, checked here, reads the same `entry` (None: the same
        whole mapping, this class having none of its own) and its loaders imply the same for
        `param`: what is wrong with it is reported there."""
        own = self.owner(entry) == self.ref if entry is not None else self.mapping is not None
        if own:
            return False
        bases = ctx.index.mro(self.ref)[1:]
        return any(
            other.ref in bases and other.implied.get(param) == self.implied.get(param)
            and (other.get(entry.key) == entry if entry is not None else other.held == self.held)
            for other in packings(ctx)
        )

    @property
    def held_by(self) -> ClassRef | None:
        """The class whose assignment this one reads, when it has none of its own."""
        return self.held[0].owner if self.held and self.mapping is None else None

    def layers(self, ctx: Context, param: str) -> list[tuple[str, Built]]:
        """The assignments of a layer named `param` in the model's modules, with their paths
        (`_layers`)."""
        if param not in self._layers:
            self._layers[param] = _layers(self.modules() + self.imported(ctx), param)
        return self._layers[param]

    def sure(self, param: str) -> bool:
        """Whether no loader left unseen can stack `param` from other shards."""
        return not self.partial or param in self.own

    def evidence(self, ctx: Context, param: str) -> list:
        return ctx.evidence(self.stacked.get(param, []), "stacked")


def packings(ctx: Context) -> list[Packing]:
    """Every class of the checked files that assigns a mapping of its own, with what it implies
    (worked out once per context: every PM rule reads them)."""
    if _MEMO and _MEMO[0] is ctx:
        return _MEMO[1]
    found = _packings(ctx)
    _MEMO[:] = [ctx, found]
    return found


_MEMO: list = []
"""The last context's packings."""


def _packings(ctx: Context) -> list[Packing]:
    found = []
    entries = {ref.key for ref in ctx.entries + ctx.drafts}
    readers = QUANT if ctx.registry_found else QUANT | {"SupportsLoRA"}
    for module, cls in ctx.target_classes():
        ref = ClassRef(module, cls)
        bases = ctx.index.base_names(ref)
        if ref.key not in entries and not readers & bases:
            continue
        resolved = resolve(ctx, ref)
        if resolved is None:
            continue
        own = resolved.written if resolved.holder == ref else None
        lora = "SupportsLoRA" in bases and (ref.key in entries or not ctx.registry_found)
        packing = Packing(ref, own, resolved.held, resolved.complete, lora)
        keys = {h.entry.key for h in resolved.held}
        for node in ctx.index.mro(ref):
            facts = node.cls.packed if node.may_hold(MAPPING) else None
            if facts is not None:
                packing.runtime.update(facts.runtime)
                packing.runtime_unknown |= facts.runtime_unknown
                if packing.lora_modules is None:
                    packing.lora_modules = facts.lora_modules
                if node is not ref and facts.mapping is not None:
                    packing.dropped.update(e.key for e in facts.mapping.entries if e.key not in keys)
        packing.loaders = _loaders(ctx, packing)
        _imply(packing, packing.loaders, set(ctx.index.mro(ref)))
        found.append(packing)
    return found


def resolve(ctx: Context, ref: ClassRef, depth: int = 0) -> Resolved | None:
    """The mapping an instance of `ref` reads as `packed_modules_mapping`, None when no class of
    its MRO assigns one; a base's mapping merged in is resolved as that base's own lookup."""
    assigned = ((n, n.cls.packed.mapping) for n in ctx.index.mro(ref) if n.may_hold(MAPPING) and n.cls.packed)
    holder, written = next(((n, m) for n, m in assigned if m is not None), (None, None))
    if holder is None or written is None:
        return None
    held: dict[str, Held] = {}
    complete = written.complete
    for name in written.bases:
        base = ctx.index.resolve(holder.module, name)[:1]
        inner = resolve(ctx, base[0], depth + 1) if base and base[0] != holder and depth < DEPTH_BASES else None
        if inner is None:
            complete = False
            continue
        complete = complete and inner.complete
        held.update((h.entry.key, h) for h in inner.held)
    held.update((e.key, Held(e, holder)) for e in written.entries)
    return Resolved(holder, written, tuple(held.values()), complete)


DEPTH_BASES = 8
"""Mappings merged from a base's, merged from a base's, ...: deeper is a cycle."""


def _loaders(ctx: Context, packing: Packing) -> list[ClassRef]:
    """The classes of the class's MRO and of the model classes it builds, `DEPTH` levels down."""
    seen: list[ClassRef] = []
    frontier = [packing.ref]
    home = packing.ref.module.module.split(".")[0]
    for _ in range(DEPTH):
        following: list[ClassRef] = []
        for holder in frontier:
            alone = _loads_alone(ctx, holder)
            for node in ctx.index.mro(holder):
                if node in seen or not _model_module(node.module.module, home):
                    continue
                seen.append(node)
                if alone or INTERFACE.search(node.header.name) or not node.may_hold(BUILDS):
                    continue  # a marker interface or a class that assigns nothing builds no submodule
                for attr, subs in node.cls.submodules.items():
                    if TOWER.search(attr) or not any(_may_be_model(node, sub, home) for sub in subs):
                        continue
                    built = ctx.resolver.built_by(holder, node, attr)
                    if isinstance(built, list):
                        following.extend(c for c in built if c not in seen and _model_module(c.module.module, home))
                    else:
                        packing.partial = True
        frontier = following
    return seen


def _loads_alone(ctx: Context, ref: ClassRef) -> bool:
    """Whether the `load_weights` an instance of `ref` runs loads every weight itself (told from
    the text of the classes of the MRO; only a class whose text names packed or stacked modules,
    the one that can hold the fact, is parsed for it)."""
    method = next((node for node in ctx.index.mro(ref) if node.may_hold(r"def\s+load_weights\b")), None)
    if method is None or not method.may_hold("|".join(WORDS)):
        return False
    facts = method.cls.packed
    return facts is not None and facts.loads_alone


def _may_be_model(node: ClassRef, sub: Submodule, home: str) -> bool:
    """Whether a construction may build a model class (whose loader counts): one built by
    architecture or by a method, a class of the module itself, or one imported from a model
    module (`_model_module`)."""
    head = sub.ctor.split(".")[0]
    if sub.ctor.split(".")[-1] in NOT_MODULES:
        return False  # a placeholder or a container (`PPMissingLayer`, `ModuleList`)
    return sub.dynamic or head in node.module.classes or any(
        _model_module(source, home) for source, _ in node.module.imports.get(head, ())
    )


def _model_module(name: str, home: str) -> bool:
    """A module of a models package, or of the checked class's own package outside vLLM (a
    plugin's or a fork's) other than its layers: not a layer of vLLM's or of the fork's."""
    parts = name.split(".")
    return "models" in parts or parts[0] == home != "vllm" and "layers" not in parts


def _imply(packing: Packing, loaders: list[ClassRef], own: set[ClassRef]) -> None:
    by_param: dict[str, dict[int | str | tuple[int, ...] | None, set[str]]] = {}
    for node in loaders:
        facts = node.cls.packed if node.may_hold(STACKS) else None
        if facts is None:
            continue
        packing.opaque |= facts.stacks_opaque
        for stack in facts.stacks:
            param = _last(stack.param)
            by_param.setdefault(param, {}).setdefault(stack.shard_id, set()).add(_last(stack.shard))
            packing.stacked.setdefault(param, []).append(Located(node.module.path, KeyUse(param, stack.line)))
            if node in own:
                packing.own.add(param)
            if node.module.path == packing.ref.module.path:
                packing.local.add(param)
    if packing.opaque:
        return
    for param, shards in by_param.items():
        order = _order(list(shards))
        if order is not None and all(len(shards[i]) == 1 for i in order) and len(order) > 1:
            packing.implied[param] = tuple(next(iter(shards[i])) for i in order)
            packing.slices[param] = sum(len(i) if isinstance(i, tuple) else 1 for i in order)


def _imported(ctx: Context, modules: list[ModuleFacts], ref: ClassRef) -> list[ModuleFacts]:
    """The model modules that `modules` import from (`ref`'s package standing for a fork's)."""
    home = ref.module.module.split(".")[0]
    names = {
        name for module in modules for pairs in module.imports.values() for source, attr in pairs
        for name in ((source, f"{source}.{attr}") if attr else (source,))
        if _model_module(name, home)
    }
    paths = {m.path for m in modules}
    return [other for name in sorted(names) if (other := ctx.index.module(name)) is not None and other.path not in paths]


def _layers(modules: list[ModuleFacts], param: str) -> list[tuple[str, Built]]:
    """Every assignment of `self.<param>` in the classes of `modules` (the model's and those they
    import from), where some class builds it as a fused layer: of a class that assigns it
    without a fused record, one of no kind."""
    found: list[tuple[str, Built]] = []
    for module in modules:
        if not _assigns(module.source, param):
            continue
        for header in module.classes.values():
            node = ClassRef(module, header)
            if module.pending.get(header.name) and not node.may_hold(_assignment(param).pattern.decode()):
                continue
            cls = node.cls
            built = [b for b in cls.fused or () if b.attr == param]
            if built:
                found.extend((module.path, b) for b in built)
            elif param in cls.submodules or param in cls.init_last_assign:
                found.append((module.path, Built(param, "", None, header.line)))
    return found


def _found(modules: list[ModuleFacts], param: str) -> bool:
    return any(_assigns(module.source, param) for module in modules)


def _assigns(source: bytes, attr: str) -> bool:
    """Whether a module assigns `self.<attr>` (annotated or not)."""
    return source.find(b"self." + attr.encode()) >= 0 and _assignment(attr).search(source) is not None


@functools.lru_cache(maxsize=256)
def _assignment(attr: str) -> re.Pattern[bytes]:
    return re.compile(rb"self\." + re.escape(attr.encode()) + rb"\s*(?::[^=\n]*)?=[^=]")


def _order(ids: list) -> list | None:
    """The shard ids in the order of the fused layer's output, or None when they cannot be told:
    ints ascending (a tuple of ints, a shard that spans those slices, by its first, when no two
    share a slice), or "q", "k", "v"."""
    if all(isinstance(i, (int, tuple)) for i in ids):
        covered = [j for i in ids for j in (i if isinstance(i, tuple) else (i,))]
        if len(set(covered)) < len(covered):
            return None
        return sorted(ids, key=lambda i: i[0] if isinstance(i, tuple) else i)
    if all(isinstance(i, str) and i in QKV for i in ids):
        return sorted(ids, key=QKV.__getitem__)
    return None


def _last(name: str) -> str:
    """The name LoRA and quantization match a layer by: its last part (`self_attn.qkv_proj`)."""
    return name.rsplit(".", 1)[-1]

