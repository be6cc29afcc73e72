"""Which values a class sends in `IntermediateTensors` can be None (PP012): plain facts from one
class's AST, in the order its methods run.

A non-last rank's dict travels key by key; a None value travels as metadata and the next rank
slices it into its buffer (`TypeError: 'NoneType' object is not subscriptable`). The None comes
from a literal, a local bound to None (the first rank's `residual = None`) that nothing rebinds,
a parameter that defaults to None, or a decoder layer whose forward returns None at the tuple
position the model unpacks (`hidden_states, residual = layer(...)`); which layer class that is
the rule resolves from `layer_ctors`, so the facts only say which `self.<attr>` was called.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ....unparse import unparse
from ....vllm_names import TENSORS_CLASS
from ....walk import dotted_name, statements, walk
from .valueguards import config_names, guarded_returns, narrowed, normalized

if TYPE_CHECKING:
    from ...base import Guard

LAYER_BUILDERS = ("make_layers",)
RANK_WORDS = ("is_first_rank", "is_last_rank", "get_pp_group", "pp_rank")


@dataclass(frozen=True)
class Origin:
    """Where a local's value may come from: `kind` "none" (a literal None at `line`), "param" (a
    parameter defaulting to None), "layer" (position `position` of what `self.<attr>[i](...)`
    returns, None only if that layer class returns None there), "method" (what `self.<attr>(...)`
    returns, None only if that method can return None) or "other" (anything else); `guard`: the
    configuration under which the None is bound, or the layer or method called."""

    kind: str
    line: int = 0
    attr: str = ""
    position: int = 0
    guard: Guard = ()


OTHER = Origin("other")


@dataclass(frozen=True)
class NoneSend:
    """A value sent under `key` at (`line`, `column`) that may be None, through `origin`; `name`
    is the local sent ("" for a literal); `guard`: the configuration under which it is sent."""

    key: str | None
    line: int
    column: int
    name: str
    origin: Origin
    guard: Guard = ()


@dataclass(frozen=True)
class ValueFacts:
    """`sends`: values that may be None; `none_returns`: (position, line, guard) where `forward`
    returns a tuple holding a literal None; `layer_ctors`: (attr, class name, line) for each
    `self.<attr>` built as a list of layers (`make_layers(n, lambda prefix: Cls(...))`,
    `nn.ModuleList([Cls(...) for ...])`); `none_methods`: (name, line, guard) of each path on
    which a method returns None (`return None`, a bare `return`). Every guard is written in terms
    of the model config (`valueguards`)."""

    sends: tuple[NoneSend, ...]
    none_returns: tuple[tuple[int, int, Guard], ...]
    layer_ctors: tuple[tuple[str, str, int], ...]
    none_methods: tuple[tuple[str, int, Guard], ...] = ()


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can hold value facts (a text test before any walk)."""
    return TENSORS_CLASS in text or "None" in text or "make_layers" in text or "ModuleList" in text


def value_facts(node: ast.ClassDef, lines: list[str]) -> ValueFacts | None:
    """`lines` are the module's source lines (index 0 is line 1): each method is walked only for
    what its text can hold."""
    sends: list[NoneSend] = []
    none_returns: tuple[tuple[int, int, Guard], ...] = ()
    ctors: list[tuple[str, str, int]] = []
    none_methods: list[tuple[str, int, Guard]] = []
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        text = "\n".join(lines[item.lineno - 1 : item.end_lineno])
        returns = [line.split("#")[0].strip() for line in lines[item.lineno - 1 : item.end_lineno]
                   if line.lstrip().startswith("return")] if "return" in text else []
        if any(builder in text for builder in (*LAYER_BUILDERS, "ModuleList")):
            ctors.extend(_layer_ctors(item))
        if any(r in ("return", "return None") for r in returns):
            none_methods.extend((item.name, line, guard) for line, guard in _returns_none(item))
        if item.name == "forward" and any("None" in r or r.endswith("(") for r in returns):
            none_returns = _none_returns(item)
        if item.name != "make_empty_intermediate_tensors" and TENSORS_CLASS in text:
            sends.extend(_Flow(item).run())
    if not (sends or none_returns or ctors or none_methods):
        return None
    guards = [g for s in sends for g in (s.guard, s.origin.guard)] + [g for *_, g in (*none_returns, *none_methods)]
    names = config_names(node) if any(guards) else {}  # read `__init__` only when a guard needs it
    return ValueFacts(
        tuple(replace(s, guard=normalized(s.guard, names),
                      origin=replace(s.origin, guard=normalized(s.origin.guard, names))) for s in sends),
        tuple((position, line, normalized(guard, names)) for position, line, guard in none_returns),
        tuple(ctors),
        tuple((name, line, normalized(guard, names)) for name, line, guard in none_methods),
    )


State = dict[str, frozenset[Origin]]


class _Flow:
    """Walks one method's statements in order with, for each local, the origins its value may
    have. Both branches of an `if` are merged (a branch that returns or raises is dropped); a
    loop body is taken to run (the layer loop always does); `if x is not None:` clears x's None
    origins inside. `IntermediateTensors(...)` returned, directly or through a local dict or
    tensors object filled by `d["k"] = v`, is what is sent. Each None and each send carries the
    configuration guard it runs under (`valueguards.narrowed`), so that the rule can tell a None
    made under one configuration from a send under another."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.fn = fn
        self.sends: list[NoneSend] = []
        self.layers: dict[str, str] = {}
        """Local bound to one element of `self.<attr>` (the loop variable) -> attr."""
        self.dicts: dict[str, list[NoneSend]] = {}
        """Local dict (or `IntermediateTensors`) being filled -> its values that may be None."""
        self.guard: Guard = ()
        """The configuration under which the statement being walked runs."""

    def run(self) -> list[NoneSend]:
        self._block(self.fn.body, self._params())
        return self.sends

    def _params(self) -> State:
        args = self.fn.args
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
        return {
            arg.arg: frozenset({Origin("param", arg.lineno) if _is_none(default) else OTHER})
            for arg, default in pairs
        }

    def _block(self, body: list[ast.stmt], state: State) -> State | None:
        """The state after `body`, or None when it always leaves (return, raise, continue, break);
        the guard is the enclosing one again after it."""
        outer = self.guard
        after = self._statements(body, state)
        self.guard = outer
        return after

    def _statements(self, body: list[ast.stmt], state: State) -> State | None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.If):
                after = self._if(stmt, state)
                if after is None:
                    return None
                state = after
            elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                state = dict(state)
                self._loop_target(stmt.target, stmt.iter, state)
                state = self._block(stmt.body, state) or state
            elif isinstance(stmt, ast.While):
                state = self._block(stmt.body, dict(state)) or state
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                after = self._block(stmt.body, state)
                if after is None:
                    return None
                state = after
            elif isinstance(stmt, ast.Try):
                state = self._block(stmt.body, state) or state
                state = self._block(stmt.finalbody, state) or state
            elif isinstance(stmt, ast.Return):
                if stmt.value is not None:
                    self._sent(stmt.value, state)
                return None
            elif isinstance(stmt, (ast.Raise, ast.Continue, ast.Break)):
                return None
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                state = self._assign(stmt, state)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                state = {**state, stmt.target.id: frozenset({OTHER})}
        return state

    def _if(self, stmt: ast.If, state: State) -> State | None:
        """Both branches merged. Under a test that is not about the rank, a local that only one
        branch rebinds keeps that branch's origins: whether the other branch runs depends on
        data or on a condition the analysis cannot relate to the send (a capture flag set in the
        layer loop), and precision comes first."""
        inside, outside = _narrowed(stmt.test)
        body_in, orelse_in = _clear(state, inside), _clear(state, outside)
        outer = self.guard
        guard_in, guard_out = narrowed(outer, stmt.test)
        self.guard = guard_in
        body = self._block(stmt.body, body_in)
        self.guard = guard_out
        orelse = self._block(stmt.orelse, orelse_in)
        self.guard = outer
        if body is None or orelse is None:
            self.guard = guard_out if body is None else guard_in
            return orelse if body is None else body
        test = unparse(stmt.test)
        by_rank = any(word in test for word in RANK_WORDS)
        merged = {}
        for name in {*body, *orelse}:
            in_body, in_orelse = body.get(name, frozenset()), orelse.get(name, frozenset())
            rebound_body, rebound_orelse = in_body is not body_in.get(name), in_orelse is not orelse_in.get(name)
            if by_rank or rebound_body == rebound_orelse:
                merged[name] = in_body | in_orelse
            else:
                merged[name] = in_body if rebound_body else in_orelse
        return merged

    def _loop_target(self, target: ast.expr, iterable: ast.expr, state: State) -> None:
        for name in _names(target):
            state[name] = frozenset({OTHER})
            self.layers.pop(name, None)
        if isinstance(iterable, ast.Call) and _callee(iterable) == "enumerate" and iterable.args:
            iterable = iterable.args[0]
            target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else target
        attr = _layers_attr(iterable)
        if attr and isinstance(target, ast.Name):
            self.layers[target.id] = attr

    def _assign(self, stmt: ast.Assign | ast.AnnAssign, state: State) -> State:
        state = dict(state)
        value = stmt.value
        assert value is not None
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name):
                state[target.id] = self._origins(value, state)
                self.layers.pop(target.id, None)
                if isinstance(value, ast.Subscript) and not isinstance(value.slice, ast.Slice):
                    attr = _layers_attr(value.value)
                    if attr:
                        self.layers[target.id] = attr
                if isinstance(value, ast.Dict):
                    self.dicts[target.id] = self._dict_values(value, state)
                elif isinstance(value, ast.Call) and _callee(value) == TENSORS_CLASS:
                    self.dicts[target.id] = self._ctor_values(value, state)
                else:
                    self.dicts.pop(target.id, None)
            elif isinstance(target, ast.Tuple):
                self._unpack(target, value, state)
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                owner = target.value.id
                if owner in self.dicts:
                    key = target.slice.value if isinstance(target.slice, ast.Constant) else None
                    self.dicts[owner].extend(self._maybe_none(key, value, state))
        return state

    def _unpack(self, target: ast.Tuple, value: ast.expr, state: State) -> None:
        attr = None
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name):
                attr = self.layers.get(func.id)
            elif isinstance(func, ast.Subscript) and not isinstance(func.slice, ast.Slice):
                attr = _layers_attr(func.value)
        for position, element in enumerate(target.elts):
            if not isinstance(element, ast.Name):
                for name in _names(element):
                    state[name] = frozenset({OTHER})
                continue
            if attr:
                state[element.id] = frozenset({Origin("layer", value.lineno, attr, position, self.guard)})
            elif isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                state[element.id] = self._origins(value.elts[position], state)
            else:
                state[element.id] = frozenset({OTHER})
            self.layers.pop(element.id, None)
            self.dicts.pop(element.id, None)

    def _origins(self, value: ast.expr, state: State) -> frozenset[Origin]:
        if _is_none(value):
            return frozenset({Origin("none", value.lineno, guard=self.guard)})
        if isinstance(value, ast.Name):
            return state.get(value.id, frozenset({OTHER}))
        if isinstance(value, ast.Call):
            parts = dotted_name(value.func)
            if parts and len(parts) == 2 and parts[0] == "self":
                return frozenset({Origin("method", value.lineno, parts[1], guard=self.guard)})
        if isinstance(value, ast.IfExp):
            inside, outside = _narrowed(value.test)
            outer = self.guard
            guard_in, guard_out = narrowed(outer, value.test)
            self.guard = guard_in
            found = self._origins(value.body, _clear(state, inside))
            self.guard = guard_out
            found |= self._origins(value.orelse, _clear(state, outside))
            self.guard = outer
            return found
        return frozenset({OTHER})

    def _sent(self, value: ast.expr, state: State) -> None:
        if isinstance(value, ast.Call) and _callee(value) == TENSORS_CLASS:
            self.sends.extend(self._ctor_values(value, state))
        elif isinstance(value, ast.Name) and value.id in self.dicts:
            self.sends.extend(replace(s, guard=_both(s.guard, self.guard)) for s in self.dicts[value.id])

    def _ctor_values(self, call: ast.Call, state: State) -> list[NoneSend]:
        arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "tensors"), None)
        if isinstance(arg, ast.Dict):
            return self._dict_values(arg, state)
        if isinstance(arg, ast.Name):
            return [replace(s, guard=_both(s.guard, self.guard)) for s in self.dicts.get(arg.id, [])]
        return []

    def _dict_values(self, node: ast.Dict, state: State) -> list[NoneSend]:
        found = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is not None:
                found.extend(self._maybe_none(key.value if isinstance(key, ast.Constant) else None, value, state))
        return found

    def _maybe_none(self, key: object, value: ast.expr, state: State) -> list[NoneSend]:
        name = value.id if isinstance(value, ast.Name) else ""
        key = key if isinstance(key, str) else None
        return [
            NoneSend(key, value.lineno, value.col_offset, name, origin, self.guard)
            for origin in sorted(self._origins(value, state), key=lambda o: (o.line, o.kind, o.position))
            if origin.kind != "other"
        ]


def _narrowed(test: ast.expr) -> tuple[set[str], set[str]]:
    """Locals known not to be None inside `if test:` and inside its `else`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        inside: set[str] = set()
        for value in test.values:
            inside |= _narrowed(value)[0]
        return inside, set()
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inside, outside = _narrowed(test.operand)
        return outside, inside
    if isinstance(test, ast.Name):
        return {test.id}, set()
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and _is_none(test.comparators[0])):
        if isinstance(test.ops[0], ast.IsNot):
            return {test.left.id}, set()
        if isinstance(test.ops[0], ast.Is):
            return set(), {test.left.id}
    return set(), set()


def _clear(state: State, names: set[str]) -> State:
    """`state` with every origin that can be None dropped for `names` (`OTHER` if none is left)."""
    if not names:
        return state
    out = dict(state)
    for name in names & state.keys():
        kept = frozenset(o for o in state[name] if o.kind == "other")
        out[name] = kept or frozenset({OTHER})
    return out


def _layers_attr(node: ast.expr) -> str | None:
    """`self.layers`, `self.layers[a:b]`, `islice(self.layers, a, b)` -> "layers"."""
    if isinstance(node, ast.Call) and _callee(node) == "islice" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _layer_ctors(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str, int]]:
    nested = {n.name: n for n in fn.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = []
    for stmt in statements([fn]):
        if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
            continue
        target = stmt.targets[0]
        last = target.elts[-1] if isinstance(target, ast.Tuple) and target.elts else target
        if not (isinstance(last, ast.Attribute) and isinstance(last.value, ast.Name) and last.value.id == "self"):
            continue
        ctor = _element_ctor(stmt.value, nested)
        if ctor:
            found.append((last.attr, ctor, stmt.lineno))
    return found


def _element_ctor(call: ast.Call, nested: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> str | None:
    """The class each element of a built layer list is made from, when it is named: the call a
    `make_layers` lambda makes, or the one a local `layer_fn` returns."""
    element: ast.expr | None = None
    if _callee(call) in LAYER_BUILDERS:
        fn = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "layer_fn"), None)
        if isinstance(fn, ast.Lambda):
            element = fn.body
        elif isinstance(fn, ast.Name) and fn.id in nested:
            returned = [n.value for n in walk(nested[fn.id]) if isinstance(n, ast.Return) and n.value is not None]
            element = returned[0] if len(returned) == 1 else None
    elif _callee(call) == "ModuleList" and call.args and isinstance(call.args[0], (ast.ListComp, ast.GeneratorExp)):
        element = call.args[0].elt
    if isinstance(element, ast.Call):
        parts = dotted_name(element.func)
        if parts and parts[0] != "self":
            return ".".join(parts)
    return None


def _none_returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[int, int, Guard], ...]:
    """(position, line, guard) of each literal None in a returned tuple."""
    found = {
        (i, node.lineno, guard) for node, guard in guarded_returns(fn) if isinstance(node.value, ast.Tuple)
        for i, element in enumerate(node.value.elts) if _is_none(element)
    }
    return tuple(sorted(found))


def _returns_none(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, Guard]]:
    """The line and guard of each `return None` or bare `return` of the method, first line first."""
    return sorted((node.lineno, guard) for node, guard in guarded_returns(fn)
                  if node.value is None or _is_none(node.value))


def _both(first: Guard, second: Guard) -> Guard:
    return first + tuple(c for c in second if c not in first)


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in walk(target) if isinstance(n, ast.Name)]


def _is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _callee(call: ast.Call) -> str:
    parts = dotted_name(call.func)
    return parts[-1] if parts else ""
