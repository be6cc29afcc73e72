"""What the analysis learns about one module, per class: plain, picklable data.

Keys carry the configuration conditions (`Guard`) under which they are allocated, sent or read;
conditions about the pipeline rank itself are not configuration and are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .families.base import Guard
from .families.pf.facts import PFClassFacts
from .families.pm.facts import PMClassFacts
from .families.pp.facts import PPClassFacts
from .vllm_names import PRODUCER

Needs = tuple[tuple[tuple[str, ...], bool], ...]
"""Objects (`("self", "model")`) that must, or must not, define `make_empty_intermediate_tensors`."""


@dataclass(frozen=True)
class KeyUse:
    """One place where a key is allocated, sent or read. `key` is None when it is dynamic."""

    key: str | None
    line: int
    guard: Guard = ()


@dataclass(frozen=True)
class Call:
    """A call that hands `intermediate_tensors` on: `self.model(...)`, `super().forward(...)`.

    `target` is the callee as a chain of names: ("self", "model"), ("self", "model", "forward"),
    ("super", "forward"), or a local variable ("language_model",). A `relay` is a call on `self`
    that is not handed `intermediate_tensors` but whose result the forward returns (a wrapper that
    reads the tensors and runs a submodule that sends): only what it sends counts.
    """

    target: tuple[str, ...]
    line: int
    guard: Guard = ()
    returned: bool = False
    relay: bool = False


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "posonly" | "positional" | "vararg" | "kwonly" | "kwarg"
    line: int
    column: int
    has_default: bool
    annotation: str | None


@dataclass(frozen=True)
class Access:
    """An access `IntermediateTensors` does not support: `.get(...)`, `.keys()` or `in`."""

    kind: str  # "get" | "keys" | "in"
    line: int
    column: int
    text: str


@dataclass(frozen=True)
class AlteredOutput:
    """A forward that changes the inner model's output (`var`, assigned at `inner_line`) at
    `line` without returning it unchanged on non-last ranks first. `var` is empty when the inner
    call is nested in an expression, or unpacked where it is made (`h, extra = self.model(...)`).
    `how`: "transformed", "unpacked" or "indexed" (by position, `out[0]`)."""

    var: str
    inner_line: int
    line: int
    insert_after: int
    target: tuple[str, ...] = ()
    how: str = "transformed"


@dataclass
class FunctionFacts:
    """A method that may take part in the contract (forward, producer, helper)."""

    name: str
    line: int
    column: int
    params: list[Param] = field(default_factory=list)
    reads: list[KeyUse] = field(default_factory=list)
    sends: list[KeyUse] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    allocs: list[KeyUse] = field(default_factory=list)
    alloc_delegations: list[Call] = field(default_factory=list)
    alloc_dicts: list[tuple[int, int]] = field(default_factory=list)
    altered: list[AlteredOutput] = field(default_factory=list)
    returns_inner: bool = False
    """Every return hands back, unchanged, what an inner call given `intermediate_tensors` returned
    (a helper a forward may call in place of the inner model)."""
    returns_tuple: bool = False
    """Every return gives a tuple literal (`return hidden_states, aux`), on every rank: a caller may
    unpack what it returns."""

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class Producer:
    """How a class defines `make_empty_intermediate_tensors`.

    kind: "factory" (call of `make_empty_intermediate_tensors_factory`), "delegate" (assigned from
    another object's attribute), "method" (a method, closure or bound method; its facts live in
    `ClassFacts.methods` under `method`), "placeholder" (a lambda that cannot take the runner's
    `(batch_size, dtype, device)`, like `lambda: None`), "none" (a lambda that returns None, or None
    itself as an arm), "stub" (`SupportsPP.make_empty_intermediate_tensors`, the interface's own), "unknown" (anything
    else).

    An arm of a conditional expression (`A.make_... if cond else (lambda: None)`) is a producer of
    its own, at the arm's place, its guard including the arm's condition; `needs` are the
    `hasattr(obj, ...)` / `getattr(obj, ..., None) or` tests that take it (`analysis.arms`).
    """

    kind: str
    line: int
    column: int
    guard: Guard = ()
    keys: tuple[str, ...] | None = None
    list_line: int = 0
    list_column: int = 0
    target: tuple[str, ...] = ()
    method: str = ""
    attr: str = PRODUCER
    scope: str = ""
    """The method whose body assigns it ("__init__", ...); empty for a method or class attribute."""
    needs: Needs = ()


@dataclass(frozen=True)
class Submodule:
    """`self.<attr> = <ctor>(...)` in a method; `ctor` is a dotted name, `dynamic` for builders,
    `arch` the one architecture a builder is told to build (`architectures=["X"]`)."""

    attr: str
    ctor: str
    line: int
    dynamic: bool
    arch: str = ""
    passes: tuple[tuple[str, str], ...] = ()
    """Keyword arguments of the construction that can be a class: (parameter, dotted name)."""
    passes_at: tuple[str, ...] = ()
    """The same by place ("" for an argument that cannot be one); empty when none can."""


@dataclass
class ClassFacts(PPClassFacts, PFClassFacts, PMClassFacts):
    name: str
    line: int
    column: int
    bases: list[str]
    producers: list[Producer] = field(default_factory=list)
    methods: dict[str, FunctionFacts] = field(default_factory=dict)
    method_names: set[str] = field(default_factory=set)
    submodules: dict[str, list[Submodule]] = field(default_factory=dict)
    locals_: dict[str, list[Submodule]] = field(default_factory=dict)
    init_last_assign: dict[str, int] = field(default_factory=dict)
    """attr -> last line of the top-level `__init__` statement that assigns `self.<attr>`."""
    init_last_build: int = 0
    """Last line of the last top-level `__init__` statement that builds a module (calls a class
    or a model builder): where vLLM writes a delegation, in 88% of vLLM 0.33.0's."""
    init_calls: tuple[str, ...] | None = None
    """Whose `__init__` this class's `__init__` calls: "super" or a base's dotted name
    (`nn.Module.__init__(self)` -> "nn.Module"); None when the class defines no `__init__`."""
    is_protocol: bool = False
    init_defaults: dict[str, str] = field(default_factory=dict)
    """`__init__` parameters whose default is a dotted name (`model_type=InternLM2Model`)."""
    init_params: tuple[str, ...] = ()
    """The positional parameters of `__init__`, after `self`."""
    init_passes: dict[str, str] = field(default_factory=dict)
    """Keyword arguments that `__init__` hands to a base's `__init__`
    (`super().__init__(model_type=model_type)`): a dotted name, or "" when not known."""
    init_passes_at: dict[int, str] = field(default_factory=dict)
    """The same for positional arguments, by place (after `self` in `Base.__init__(self, ...)`)."""
    class_attrs: dict[str, str] = field(default_factory=dict)
    """Class-body `name = <dotted name>` (`model_cls = DeepseekV4Model`): the class an instance
    builds with `self.<name>(...)`, unless a subclass names another."""
    returns: dict[str, list[Submodule]] = field(default_factory=dict)
    """Method -> the constructions it returns (`return LlamaModel(...)`, `return self.model_cls(...)`):
    what `self.<method>(...)` builds, unless a subclass overrides the method."""
    misspelled_producer: list[Producer] = field(default_factory=list)


@dataclass(frozen=True)
class LazyExport:
    """A class a module-level `__getattr__` can return (PEP 562): `attr` of `module`, or the
    name asked for when `attr` is None (`getattr(module, name)`), for the names `names` allows
    (None: any) and `excluded` does not (an earlier branch returned those)."""

    module: str
    attr: str | None
    names: tuple[str, ...] | None = None
    excluded: tuple[str, ...] = ()

    def offers(self, name: str) -> str | None:
        """The class name to look up in `module` when `name` is asked for, if this export applies."""
        if name in self.excluded or self.names is not None and name not in self.names:
            return None
        return self.attr or name


@dataclass
class ModuleFacts:
    path: str
    module: str
    imports: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    lazy: list[LazyExport] = field(default_factory=list)
    """What the module's `__getattr__` returns: a package that picks a class by platform at run
    time binds the name only under `TYPE_CHECKING`, if at all."""
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    uses_pipe_optional: bool = False
    uses_typing_optional: bool = False
    future_annotations: bool = False
    suppressions: dict[int, tuple[str, ...]] = field(default_factory=dict)
    pending: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    """Classes whose body was not parsed (no need of `analysis.needs` asked for it) -> the lines
    of their block (first, last) and its bytes [start, stop), to search its text. Their entry in
    `classes` holds only what the header says (name, place, bases); `ClassRef` completes one
    (`analysis.complete`) before anything reads it."""
    source: bytes = field(default=b"", repr=False, compare=False)
    """The bytes the facts were read from, to complete pending classes. Not pickled: whoever
    reads facts back from the cache or a worker sets it again."""

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "source"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.source = b""


@dataclass(frozen=True)
class Located:
    """A key use with the file it sits in."""

    path: str
    use: KeyUse


@dataclass
class Side:
    """The keys of one side of the contract (F, P or R); `complete` is False when some are unknown."""

    uses: list[Located] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.unknown and all(u.use.key is not None for u in self.uses)

    def extend(self, other: Side, guard=()) -> None:
        for u in other.uses:
            self.uses.append(Located(u.path, KeyUse(u.use.key, u.use.line, guard + u.use.guard)))
        self.unknown.extend(other.unknown)
