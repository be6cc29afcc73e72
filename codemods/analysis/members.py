"""What a method assigns to `self`: producers (`self.make_empty_intermediate_tensors = ...`), each
with its configuration guard, and submodules (`self.model = LlamaModel(...)`)."""

from __future__ import annotations

import ast
from typing import TypedDict

from ..aliases import class_aliases
from ..facts import ClassFacts, Guard, Needs, Producer, Submodule
from ..vllm_names import PP_INTERFACE
from .arms import arms
from .syntax import ATTR, FACTORY, Function, blocks, condition, const_str, dotted, dynamic_builder, name_defaults
from .traffic import FunctionAnalyzer, params_of, takes_three

Tests = tuple[tuple[ast.expr, bool], ...]
"""The `if` tests a statement is under, each with the branch taken (True: the body): read as a
`Guard` only for a producer, the one fact that has one."""


def _guard(tests: Tests) -> Guard:
    """The configuration conditions among `tests` (rank and runtime tests are no guard)."""
    found = []
    for test, body in tests:
        cond = condition(test)
        if cond:
            found.append(cond if body else (cond[0], not cond[1]))
    return tuple(found)


class _Where(TypedDict):
    """Where a producer is assigned: the keyword arguments every `Producer` built here shares."""

    line: int
    column: int
    guard: Guard
    scope: str
    needs: Needs


class MemberWalker:
    """Finds producers and submodules in one method, adding them to the class's `facts`.

    Follows `if`/`else` (a configuration test becomes the guard of what is assigned under it),
    loops, `with` and `try`. Local variables assigned a construction (`model = Cls(...)`) go to
    `ClassFacts.locals_`, so `self.model = model` and calls through the local resolve.
    """

    def __init__(self, facts: ClassFacts, fn: Function) -> None:
        self.facts = facts
        self.fn = fn
        self.nested = {  # functions defined in the method: a producer may be one of these closures
            n.name: n for n in fn.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.classes = frozenset(name_defaults(fn))
        """The method's parameters whose default is a class: handed to a constructor, they pass
        the caller's choice on."""
        self.aliases = class_aliases(fn)

    def walk(self, body: list[ast.stmt], tests: Tests) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                self.walk(stmt.body, tests + ((stmt.test, True),))
                self.walk(stmt.orelse, tests + ((stmt.test, False),))
            elif isinstance(stmt, (ast.With, ast.For, ast.While, ast.Try)):
                for block in blocks(stmt):
                    self.walk(block, tests)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                self._assign(stmt, stmt.value, tests)
            elif isinstance(stmt, ast.Return) and stmt.value is not None and self.fn.name != "forward":
                for sub in self._built(self.fn.name, stmt.value, stmt.lineno):
                    if sub.dynamic or sub.ctor.split(".")[-1][:1].isupper():  # a construction
                        self.facts.returns.setdefault(self.fn.name, []).append(sub)

    def _assign(self, stmt: ast.Assign | ast.AnnAssign, value: ast.expr, tests: Tests) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name):
                if target.id not in self.aliases:
                    self.facts.locals_.setdefault(target.id, []).extend(self._built(target.id, value, stmt.lineno))
                continue
            if not (isinstance(target, ast.Attribute) and dotted(target.value) == ("self",)):
                continue
            if target.attr == ATTR:
                split = arms(value)
                for arm in split:
                    at = arm.value if len(split) > 1 else stmt
                    self.facts.producers.append(self._producer(at, arm.value, _guard(tests) + arm.guard, arm.needs))
            elif target.attr.startswith("make_empty") and target.attr != ATTR:
                self.facts.misspelled_producer.append(
                    Producer("unknown", stmt.lineno, stmt.col_offset, attr=target.attr)
                )
            else:
                subs = self._built(target.attr, value, stmt.lineno)
                if not subs and isinstance(stmt, ast.AnnAssign):
                    subs = [sub] if (sub := _annotated(target.attr, stmt.annotation, stmt.lineno)) else []
                if not subs and isinstance(value, ast.Name):
                    subs = [
                        Submodule(target.attr, local.ctor, stmt.lineno, local.dynamic, passes=local.passes,
                                  passes_at=local.passes_at)
                        for local in _last(self.facts.locals_.get(value.id, []))
                    ]
                if subs:
                    self.facts.submodules.setdefault(target.attr, []).extend(subs)

    def _built(self, attr: str, value: ast.expr, line: int) -> list[Submodule]:
        """What `value` builds: a construction, or one per class a local alias can name."""
        chain = dotted(value.func) if isinstance(value, ast.Call) else None
        if chain and len(chain) == 1 and chain[0] in self.aliases:
            assert isinstance(value, ast.Call)
            return [Submodule(attr, cls, line, dynamic=False, **_handed(value, self.classes))
                    for cls in self.aliases[chain[0]]]
        sub = _submodule(attr, value, line, self.classes)
        return [sub] if sub else []

    def _producer(self, at: ast.stmt | ast.expr, value: ast.expr, guard: Guard, needs: Needs) -> Producer:
        """What `value` makes of `make_empty_intermediate_tensors`, assigned (or, for an arm of a
        conditional expression, written) at `at`."""
        where: _Where = dict(line=at.lineno, column=at.col_offset, guard=guard, scope=self.fn.name, needs=needs)
        if isinstance(value, ast.Call) and (dotted(value.func) or ("",))[-1] == FACTORY:
            keys_node = value.args[0] if value.args else next(
                (k.value for k in value.keywords if k.arg in ("keys", "tensor_names")), None
            )
            keys = None
            if isinstance(keys_node, (ast.List, ast.Tuple)):
                strs = [s for s in map(const_str, keys_node.elts) if s is not None]
                if len(strs) == len(keys_node.elts):
                    keys = tuple(strs)
            return Producer(
                "factory",
                keys=keys,
                list_line=getattr(keys_node, "lineno", 0),
                list_column=getattr(keys_node, "col_offset", 0),
                **where,
            )
        chain = dotted(value) if isinstance(value, ast.Attribute) else None
        if chain and chain[-1] == ATTR and len(chain) > 1:
            return Producer("stub" if chain[-2] == PP_INTERFACE else "delegate", target=chain[:-1], **where)
        if chain and chain[0] == "self" and len(chain) == 2:
            return Producer("method", method=chain[1], **where)
        if isinstance(value, ast.Lambda) and not takes_three(params_of(value)):
            return Producer("placeholder", **where)
        if _gives_none(value) or (at is value and isinstance(value, ast.Constant) and not value.value):
            return Producer("none", **where)  # a constant only as an arm (`... else None`), not `= None` first
        if isinstance(value, ast.Name) and value.id in self.nested:
            name = f"{self.fn.name}.<locals>.{value.id}"
            self.facts.methods[name] = FunctionAnalyzer(self.nested[value.id], producer=True).run()
            return Producer("method", method=name, **where)
        return Producer("unknown", **where)


def _gives_none(value: ast.expr) -> bool:
    """A lambda that returns None (`lambda *args, **kwargs: None`)."""
    return isinstance(value, ast.Lambda) and isinstance(value.body, ast.Constant) and value.body.value is None


def _last(locals_: list[Submodule]) -> list[Submodule]:
    """The constructions of a local's last assignment (one per class an alias names)."""
    return [local for local in locals_ if local.line == locals_[-1].line]


def _submodule(attr: str, value: ast.expr, line: int, classes: frozenset[str] = frozenset()) -> Submodule | None:
    """`self.<attr> = Cls(...)`, with the classes it hands `Cls` (`classes`: the method's own
    parameters that hold one); built by a method or a class held by the instance
    (`self._init_model(...)`, `self.model_cls(...)`), it is dynamic."""
    if not isinstance(value, ast.Call):
        return None
    chain = dotted(value.func)
    if chain is not None and chain[0] == "self" and len(chain) == 2:
        return Submodule(attr, ".".join(chain), line, dynamic=True)
    if chain is None or chain[0] == "self":
        return None
    name = ".".join(chain)
    if not dynamic_builder(chain[-1]):
        return Submodule(attr, name, line, dynamic=False, **_handed(value, classes))
    archs = next((k.value for k in value.keywords if k.arg == "architectures"), None)
    named = archs.elts if isinstance(archs, (ast.List, ast.Tuple)) else []
    arch = const_str(named[0]) if len(named) == 1 else None
    return Submodule(attr, name, line, dynamic=True, arch=arch or "")


def _handed(call: ast.Call, classes: frozenset[str]) -> _Handed:
    """The arguments of a construction that can be a class (a layer type): a dotted name whose
    last part is capitalized (`FlexOlmoDecoderLayer`), or the bare name of one of `classes`; by
    keyword, and by place ("" where the argument is something else)."""
    def handed(node: ast.expr) -> str:
        chain = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if not chain or chain[0] == "self" or not (chain[-1][:1].isupper() or chain == (chain[0],) and chain[0] in classes):
            return ""
        return ".".join(chain)

    places = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            break
        places.append(handed(arg))
    return {
        "passes": tuple((k.arg, name) for k in call.keywords if k.arg and (name := handed(k.value))),
        "passes_at": tuple(places) if any(places) else (),
    }


class _Handed(TypedDict):
    passes: tuple[tuple[str, str], ...]
    passes_at: tuple[str, ...]


def _annotated(attr: str, annotation: ast.expr, line: int) -> Submodule | None:
    """`self.x: Decoder | None = None`: the declared class (`Decoder`), when there is one."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        named = [n for n in sides if not (isinstance(n, ast.Constant) and n.value is None)]
        annotation = named[0] if len(named) == 1 else annotation
    elif isinstance(annotation, ast.Subscript) and (dotted(annotation.value) or ("",))[-1] == "Optional":
        annotation = annotation.slice
    chain = dotted(annotation) if isinstance(annotation, (ast.Name, ast.Attribute)) else None
    if chain is None or chain[0] == "self":
        return None
    return Submodule(attr, ".".join(chain), line, dynamic=False)
