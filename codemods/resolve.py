"""Follow inheritance, delegation and forward calls to the keys a class allocates, sends and reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from .conditions import exclusive
from .facts import Call, Guard, KeyUse, Located, Producer, Side, Submodule
from .index import ClassRef, Index, Method

NOT_MODULES = {"PPMissingLayer", "Identity", "ModuleList", "ModuleDict", "Sequential"}


@dataclass(frozen=True)
class Branch:
    """One way `make_empty_intermediate_tensors` gets defined: the configurations that take it
    (`guard`), the keys then allocated, and the producer site an edit would change (`own`: the
    site alone decides the keys under `guard`, so editing it is sound)."""

    owner: ClassRef
    producer: Producer
    guard: Guard
    side: Side
    own: bool


@dataclass
class Allocation:
    """F: what `make_empty_intermediate_tensors` allocates, and the producer sites that define it
    (with the configuration guard each is assigned under)."""

    side: Side
    sites: list[tuple[ClassRef, Producer]] = field(default_factory=list)
    missing: bool = False
    guards: list[Guard] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    """Bases (as written) that resolve to no class and may define it where no class of the MRO does."""

    def branches(self) -> list[Branch]:
        """One branch per literal factory list when every site is one and no configuration takes
        two of them (`if cfg: factory([...]) else: factory([...])`); else one branch holding
        everything, editable only when it has a single unguarded site."""
        factories = all(p.kind == "factory" and p.keys is not None for _, p in self.sites)
        if len(self.sites) > 1 and factories and exclusive(self.guards):
            return [
                Branch(owner, p, guard, Side([Located(owner.module.path, KeyUse(k, p.list_line or p.line, guard)) for k in p.keys or ()]), True)
                for (owner, p), guard in zip(self.sites, self.guards, strict=True)
            ]
        (owner, producer), guard = self.sites[0], self.guards[0]
        alone = len(self.sites) == 1
        return [Branch(owner, producer, guard if alone else (), self.side, alone)]


@dataclass
class Traffic:
    """P and R: what a class's forward sends and reads, through the submodules it calls."""

    sends: Side
    reads: Side
    forward: Method | None = None


class Resolver:
    """`architectures` maps a registered architecture to its (dotted module, class), for
    submodules built by the registry with `architectures=["X"]`; a base imported from one of
    `packages` that resolves to no class may define what no resolved class does."""

    def __init__(self, index: Index, architectures: dict[str, tuple[str, str]], packages: frozenset[str]) -> None:
        self.index = index
        self.architectures = architectures
        self.packages = packages
        self._alloc: dict = {}
        self._traffic: dict = {}
        self._handed: dict[tuple[str, str], list[tuple[ClassRef, Submodule]]] = {}

    def traced(self) -> bool:
        """Whether any traffic or allocation was asked for (and memoized)."""
        return bool(self._alloc or self._traffic)

    def allocation(self, ref: ClassRef, trail: tuple = ()) -> Allocation:
        if ref.key in trail:
            return Allocation(Side(unknown=["delegation cycle"]))
        if ref.key not in self._alloc:
            self._alloc[ref.key] = self._allocation(ref, trail + (ref.key,))
        return self._alloc[ref.key]

    def _allocation(self, ref: ClassRef, trail: tuple) -> Allocation:
        """From the first class in the MRO with a producer that takes effect: one assigned in an
        `__init__` counts only when that `__init__` runs for `ref`. With none, it is missing
        unless a base that resolves to no class may define it (a plugin's base from vLLM, checked
        without vLLM): then it is unknown."""
        runs = self.index.initialized(ref)
        chain = self.index.mro(ref)
        for node in chain:
            if node.header.is_protocol:
                continue
            producers = self.effective(ref, node, trail, runs)
            if producers:
                return self._producers(ref, node, trail, producers)
        opaque = [
            (node, base) for node in chain for base in node.header.bases if self.index.opaque(node.module, base, self.packages)
        ]
        if opaque:
            unknown = [f"base `{base}` of {node.header.name} resolves to no class" for node, base in opaque]
            return Allocation(Side(unknown=unknown), opaque=[base for _, base in opaque])
        return Allocation(Side(unknown=["no make_empty_intermediate_tensors"]), missing=True)

    def effective(self, ref: ClassRef, node: ClassRef, trail: tuple = (), runs: set | None = None) -> list[Producer]:
        """The producers of `node` (a class of `ref`'s MRO) that can take effect for an instance of
        `ref`: one assigned in an `__init__` that runs for it (`runs`, when known), and not an arm
        its needs rule out."""
        ran = self.index.initialized(ref) if runs is None else runs
        return [
            p for p in node.producers
            if (p.scope != "__init__" or node.key in ran) and self.taken(ref, p, trail) is not False
        ]

    def taken(self, ref: ClassRef, producer: Producer, trail: tuple = ()) -> bool | None:
        """Whether an arm of a conditional expression is taken for an instance of `ref`, as far as
        its `hasattr` / `getattr` tests tell: False when one of the objects they test does, or does
        not, define a producer against what the arm needs (or its guard contradicts itself: the arm
        `else` of a test an enclosing `if` made true); None when one is not known."""
        if any((cond, not holds) in producer.guard for cond, holds in producer.guard):
            return False
        told: bool | None = True
        for chain, defines in producer.needs:
            owners = self.object_classes(ref, chain) if chain != ("self",) else "self"
            found = self.allocation(owners[0], trail) if isinstance(owners, list) and owners else None
            if found is None or found.opaque:
                told = None
            elif found.missing == defines:
                return False
        return told

    def _producers(self, ref: ClassRef, node: ClassRef, trail: tuple, producers: list[Producer]) -> Allocation:
        result = Allocation(Side())
        for producer in producers:
            inner = self._produced(ref, node, producer, trail)
            result.side.extend(inner.side, producer.guard)
            result.sites.extend(inner.sites)
            result.guards.extend(producer.guard + guard for guard in inner.guards)
        return result

    def _produced(self, ref: ClassRef, node: ClassRef, producer: Producer, trail: tuple) -> Allocation:
        """What one producer allocates; `sites` are where its keys are written down."""
        path = node.module.path
        site: list[tuple[ClassRef, Producer]] = [(node, producer)]
        unguarded: list[Guard] = [()]
        if producer.kind == "factory":
            if producer.keys is None:
                return Allocation(Side(unknown=["the factory's keys are not a literal list"]), site, guards=unguarded)
            line = producer.list_line or producer.line
            return Allocation(Side([Located(path, KeyUse(k, line)) for k in producer.keys]), site, guards=unguarded)
        if producer.kind == "delegate":
            return self.delegated(ref, node, producer.target, trail)
        if producer.kind == "method":
            own = node.cls.methods.get(producer.method)
            found = Method(node, own) if own is not None else self.index.find_method(node, producer.method)
            if found is None:
                return Allocation(Side(unknown=[f"method {producer.method} not found"]), site, guards=unguarded)
            owner, fn = found
            result = Allocation(Side([Located(owner.module.path, u) for u in fn.allocs]), site, guards=unguarded)
            for call in fn.alloc_delegations:
                result.side.extend(self.delegated(ref, owner, call.target, trail).side, call.guard)
            if not fn.allocs and not fn.alloc_delegations:
                result.side.unknown.append(f"{producer.method} builds no IntermediateTensors literal")
            return result
        if producer.kind in ("placeholder", "none", "stub"):
            placeholder = ["make_empty_intermediate_tensors is a placeholder"]
            return Allocation(Side(unknown=placeholder), site, guards=unguarded)
        return Allocation(Side(unknown=["make_empty_intermediate_tensors is assigned an expression not understood"]), site, guards=unguarded)

    def delegated(self, ref: ClassRef, node: ClassRef, target: tuple[str, ...], trail: tuple = ()) -> Allocation:
        """What `<target>.make_empty_intermediate_tensors`, written in `node`, allocates for an
        instance of `ref` (`missing` when the target's class defines none)."""
        if target and target[0] == "super":
            for parent in self.index.mro(node)[1:]:
                producers = [] if parent.header.is_protocol else [
                    p for p in parent.producers if self.taken(ref, p, trail) is not False
                ]
                if producers:
                    return self._producers(ref, parent, trail, producers)
            return Allocation(Side(unknown=["super() has no make_empty_intermediate_tensors"]))
        owners = self.object_classes(ref, target)
        if isinstance(owners, str):
            return Allocation(Side(unknown=[owners]))
        if not owners:
            return Allocation(Side(unknown=[f"{'.'.join(target)} not resolved"]))
        return self.allocation(owners[0], trail)

    def object_classes(self, ref: ClassRef, chain: tuple[str, ...]) -> list[ClassRef] | str:
        """The classes of `self.a.b` (chain ("self", "a", "b")) or of a local `x` in `__init__`."""
        if not chain:
            return [ref]
        current = [ref] if chain[0] == "self" else self._local(ref, chain[0])
        if isinstance(current, str):
            return current
        for attr in chain[1:]:
            step = self._attribute(current[0], attr) if current else "unresolved"
            if isinstance(step, str):
                return step
            current = step
        return current

    def built_by(self, ref: ClassRef, node: ClassRef, attr: str) -> list[ClassRef] | str:
        """The classes of what `node`, a class of `ref`'s MRO, assigns to `self.<attr>` when it
        builds an instance of `ref` (which may hand it another class, or name another)."""
        return self._constructed(ref, node, node.cls.submodules[attr], f"self.{attr}")

    def _local(self, ref: ClassRef, name: str) -> list[ClassRef] | str:
        for node in self.index.mro(ref):
            subs = node.cls.locals_.get(name)
            if subs:
                return self._constructed(ref, node, subs, name)
        return f"`{name}` not resolved"

    def _attribute(self, ref: ClassRef, attr: str) -> list[ClassRef] | str:
        for node in self.index.mro(ref):
            subs = node.cls.submodules.get(attr)
            if subs:
                return self._constructed(ref, node, subs, f"self.{attr}")
        return f"`self.{attr}` not resolved"

    def _constructed(self, ref: ClassRef, node: ClassRef, subs, label: str) -> list[ClassRef] | str:
        """The classes of what `node` (a class of `ref`'s MRO) builds in `subs`, for an instance
        of `ref`."""
        found: list[ClassRef] = []
        for sub in subs:
            if sub.dynamic:
                built = self._built(ref, sub, 0)
                if not built:
                    return f"{label} is built dynamically ({sub.ctor})"
                found.extend(c for c in built if c not in found)
            elif sub.ctor.split(".")[-1] not in NOT_MODULES:
                found.extend(c for c in self._named(ref, node, sub.ctor) if c not in found)
        return found or f"{label} ({subs[0].ctor}) not resolved"

    def _named(self, ref: ClassRef, node: ClassRef, name: str) -> list[ClassRef]:
        """The classes `name`, used in `node` (a class of `ref`'s MRO), stands for in an instance
        of `ref` (`argument`)."""
        owner, name = self.argument(ref, node, name)
        return self.index.resolve(owner.module, name)

    def argument(self, ref: ClassRef, node: ClassRef, ctor: str) -> tuple[ClassRef, str]:
        """The class `ctor` names for an instance of `ref`, and the class whose module to read it
        in. A parameter of `node`'s `__init__` with a default (`model_type=InternLM2Model`) is
        what the first subclass `__init__` of `ref`'s MRO hands on for it, by keyword or by
        place (its own parameter's default, when it hands that on; "" when it is not known),
        else the default; any other name is itself."""
        if ctor not in node.cls.init_defaults:
            return node, ctor
        params = node.cls.init_params
        place = params.index(ctor) if ctor in params else -1
        for owner in self.index.mro(ref):
            if owner.key == node.key:
                break
            value = owner.cls.init_passes.get(ctor, owner.cls.init_passes_at.get(place))
            if value is not None:
                return owner, owner.cls.init_defaults.get(value, value)
        return node, node.cls.init_defaults[ctor]

    def handed_in(self, ref: ClassRef, param: str, builders: list[ClassRef]) -> list[tuple[ClassRef, ClassRef]]:
        """(class, builder) for each class one of `builders` hands to the `__init__` parameter
        `param` of an instance of `ref` it builds (by keyword, or by place), as that builder's
        instance resolves it (a parameter of its own is what its subclasses hand on)."""
        place = ref.cls.init_params.index(param) if param in ref.cls.init_params else -1
        found: list[tuple[ClassRef, ClassRef]] = []
        for builder in builders:
            for node, sub in self._handing(builder):
                value = dict(sub.passes).get(param) or (sub.passes_at[place] if 0 <= place < len(sub.passes_at) else "")
                if value and ref in self._named(builder, node, sub.ctor):
                    found.extend((c, builder) for c in self._named(builder, node, value) if (c, builder) not in found)
        return found

    def _handing(self, builder: ClassRef) -> list[tuple[ClassRef, Submodule]]:
        """The constructions an instance of `builder` runs that hand on an argument that can be a
        class, each with the class of its MRO that runs it (the first to build an attribute)."""
        if builder.key not in self._handed:
            seen: set[str] = set()
            found: list[tuple[ClassRef, Submodule]] = []
            for node in self.index.mro(builder):
                for attr, subs in node.cls.submodules.items():
                    if attr not in seen:  # built by a subclass: the base's construction never runs
                        seen.add(attr)
                        found.extend((node, sub) for sub in subs if (sub.passes or sub.passes_at) and not sub.dynamic)
            self._handed[builder.key] = found
        return self._handed[builder.key]

    def _built(self, ref: ClassRef, sub: Submodule, depth: int) -> list[ClassRef]:
        """What a dynamic construction builds for an instance of `ref`: a registered architecture
        (`architectures=["X"]`), or through `self.<name>(...)` the class a class attribute names
        (`model_cls = DeepseekV4Model`) or what a method returns (`_init_model`), as the first
        class of `ref`'s MRO that has the name defines it (a subclass overrides either). Empty
        when it cannot be told."""
        if sub.arch:
            registered = self.architectures.get(sub.arch)
            return self.index.lookup(*registered) if registered else []
        name = sub.ctor.removeprefix("self.")
        if name == sub.ctor or depth > 3:
            return []
        for owner in self.index.mro(ref):
            value = owner.cls.class_attrs.get(name)
            if value is not None:
                return [] if value.split(".")[-1] in NOT_MODULES else self.index.resolve(owner.module, value)
            if owner.defines(name):
                found: list[ClassRef] = []
                for returned in owner.cls.returns.get(name, []):
                    built = (self._built(ref, returned, depth + 1) if returned.dynamic
                             else self.index.resolve(owner.module, returned.ctor))
                    if not built:
                        return []
                    found.extend(c for c in built if c not in found)
                return found
        return []

    def traffic(self, ref: ClassRef, method: str = "forward", trail: tuple = ()) -> Traffic:
        key = (ref.key, method)
        if key in trail:
            return Traffic(Side(unknown=["call cycle"]), Side(unknown=["call cycle"]))
        if key not in self._traffic:
            self._traffic[key] = self._compute_traffic(ref, method, trail + (key,))
        return self._traffic[key]

    def _compute_traffic(self, ref: ClassRef, method: str, trail: tuple) -> Traffic:
        found = self.index.find_method(ref, method)
        if found is None:
            return Traffic(Side(unknown=[f"{method} not found"]), Side(unknown=[f"{method} not found"]))
        owner, fn = found
        path = owner.module.path
        result = Traffic(
            Side([Located(path, u) for u in fn.sends]),
            Side([Located(path, u) for u in fn.reads]),
            forward=found,
        )
        for call in fn.calls:
            inner = self._call_traffic(ref, owner, call, trail)
            if call.relay:
                if inner is not None and inner.forward is not None:
                    result.sends.extend(inner.sends, call.guard)
                continue
            if inner is None:
                label = ".".join(call.target)
                result.reads.unknown.append(f"intermediate_tensors passed to {label}()")
                if call.returned:
                    result.sends.unknown.append(f"returns {label}()")
                continue
            result.reads.extend(inner.reads, call.guard)
            result.sends.extend(inner.sends, call.guard)
        return result

    def _call_traffic(self, ref: ClassRef, owner: ClassRef, call: Call, trail: tuple) -> Traffic | None:
        target = call.target
        if target[0] == "super":
            found = self.index.find_method(ref, target[-1], after=owner)
            if found is None:
                return None
            return self.traffic(found.owner, target[-1], trail)
        if target[0] == "self" and len(target) == 2 and self.is_method(ref, target[1]):
            return self.traffic(ref, target[1], trail)
        method = "forward"
        chain = target
        if len(target) > 2 or target[0] != "self":
            objects = self.object_classes(ref, target[:-1])
            if not isinstance(objects, str) and objects and self.is_method(objects[0], target[-1]):
                chain, method = target[:-1], target[-1]
        objects = self.object_classes(ref, chain)
        if isinstance(objects, str) or not objects:
            return None
        return self.traffic(objects[0], method, trail)

    def is_method(self, ref: ClassRef, name: str) -> bool:
        return any(node.defines(name) for node in self.index.mro(ref))
