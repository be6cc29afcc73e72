"""Where a forward alters the inner model's output on a path that a non-last rank can take
(PP006), by control flow.

The inner output is followed through the forward's statements: assignments and aliases,
`if`/`else` branches (each path on its own), `with` and `try` bodies, and expressions that use it
inline (`return self.model(...) / self.scale`). Unpacking it (`h, extra = self.model(...)`,
`h, *rest = out`) or indexing it by position (`out[0]`) alters it too: IntermediateTensors answers
an integer index with None, so `out[0]` is None and unpacking never runs out of items. A branch
that only the last rank takes (`if get_pp_group().is_last_rank:`, the code after `if not
...is_last_rank: return h`, or after `if isinstance(h, IntermediateTensors): return h`) may
transform it freely. A use under a configuration condition (`if self.flag:`) of an output produced
before it cannot be proven to run under pipeline parallelism and is left alone.

Holding the output unchanged is not altering it: a dict, list or tuple literal that stores it, and
a returned `*Output(...)` container that carries it as an argument (vllm-omni's runners unwrap
`OmniOutput(text_hidden_states=h, ...)` before they check for IntermediateTensors).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..facts import AlteredOutput
from ..unparse import unparse
from ..walk import walk

PassesIt = Callable[[ast.Call], bool]


@dataclass(frozen=True)
class _Inner:
    """A local that holds the inner output unchanged."""

    line: int
    end: int
    target: tuple[str, ...]
    depth: int
    top: bool
    """Assigned by a top-level statement of the function (where a fix can insert after it)."""


@dataclass
class _State:
    inner: dict[str, _Inner] = field(default_factory=dict)
    last_only: bool = False
    depth: int = 0
    """How many configuration conditions enclose the current statement."""

    def copy(self, **changes) -> _State:
        return replace(self, inner=dict(self.inner), **changes)


class Flow:
    """Walk one function; `found` lists each alteration, `passes_through` says whether every
    return hands back the inner output unchanged (a helper the forward may call instead)."""

    def __init__(self, passes_it: PassesIt, chain: Callable[[ast.expr], tuple[str, ...] | None],
                 is_config: Callable[[ast.expr], bool]) -> None:
        self.passes_it = passes_it
        self.chain = chain
        self.is_config = is_config
        self.found: list[AlteredOutput] = []
        self.returns: list[bool] = []
        self.made_call = False
        self.top: list[ast.stmt] = []
        self.level = 0

    def inner_call(self, node: ast.AST) -> bool:
        """A call of a module given `intermediate_tensors`: `self.model(...)`,
        `self.model.forward(...)`, `super().forward(...)`, a local alias `language_model(...)`, a
        helper method `self._run(...)`, or any call shaped like a model forward (the tensors third
        positionally or by keyword: `self.language_model.model(ids, pos, intermediate_tensors)`,
        `self.models[0](ids, pos, intermediate_tensors)`, whose callee is no dotted name);
        not another method of a submodule (`decode.plan(positions, intermediate_tensors)`), whose
        result is not the model's output."""
        if not (isinstance(node, ast.Call) and self.passes_it(node)):
            return False
        chain = self.chain(node.func) or ()
        if chain and (len(chain) == 1 or chain[-1] == "forward" or (len(chain) == 2 and chain[0] == "self")):
            return True
        third = len(node.args) > 2 and isinstance(node.args[2], ast.Name)
        return third or any(k.arg in ("intermediate_tensors", None) for k in node.keywords)

    def run(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Flow:
        self.top = fn.body
        self.block(fn.body, _State())
        return self

    @property
    def passes_through(self) -> bool:
        return self.made_call and bool(self.returns) and all(self.returns) and not self.found

    def block(self, body: list[ast.stmt], state: _State) -> _State | None:
        """The state after `body`, or None when every path through it returns or raises."""
        current: _State | None = state
        self.level += 1
        try:
            for stmt in body:
                if current is None:
                    return None
                current = self.statement(stmt, current)
            return current
        finally:
            self.level -= 1

    def statement(self, stmt: ast.stmt, state: _State) -> _State | None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return state
        if isinstance(stmt, ast.Return):
            self._return(stmt.value, stmt, state)
            return None
        if isinstance(stmt, ast.Raise):
            return None
        if isinstance(stmt, ast.If):
            return self._if(stmt, state)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            self._uses(stmt.items, stmt, state)
            return self.block(stmt.body, state)
        if isinstance(stmt, ast.Try):
            after = self.block(stmt.body, state.copy())
            return self.block(stmt.finalbody, after) if after is not None else None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            return self._assign(stmt.targets[0].id, stmt.value, stmt, state)
        if isinstance(stmt, ast.Assign) and _unpacks(stmt.targets):
            return self._unpacked(stmt, state)
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            return self._assign(stmt.target.id, stmt.value, stmt, state)
        self._uses(_values(stmt), stmt, state)
        return state

    def _assign(self, name: str, value: ast.expr, stmt: ast.stmt, state: _State) -> _State:
        if isinstance(value, ast.Call) and self.inner_call(value):
            self.made_call = True
            if not state.last_only:
                end = stmt.end_lineno or stmt.lineno
                state.inner[name] = _Inner(stmt.lineno, end, self.chain(value.func) or (), state.depth, self.level == 1)
            return state
        if isinstance(value, ast.Name) and value.id in state.inner:
            state.inner[name] = state.inner[value.id]
            return state
        if not (isinstance(value, (ast.Dict, ast.List, ast.Tuple)) and self._held(value, state)):
            self._uses(value, stmt, state)
        state.inner.pop(name, None)
        return state

    def _unpacked(self, stmt: ast.Assign, state: _State) -> _State:
        """`h, extra = self.model(...)` or `h, extra = out`: unpacking iterates the output, which
        on a non-last rank is IntermediateTensors (its `__getitem__(0)` is None, and never ends)."""
        value = stmt.value
        name = value.id if isinstance(value, ast.Name) else ""
        held = state.inner.get(name)
        call = value if held is None and isinstance(value, ast.Call) and self.inner_call(value) else None
        if held is None and call is None:
            self._uses(value, stmt, state)
        elif held is not None and not (state.last_only or self.found or held.depth < state.depth):
            insert = self._insert_after(held, stmt)
            self.found.append(AlteredOutput(name, held.line, stmt.lineno, insert, held.target, "unpacked"))
        elif call is not None and not (state.last_only or self.found):
            callee = self.chain(call.func) or ()
            self.found.append(AlteredOutput("", stmt.lineno, stmt.lineno, 0, callee, "unpacked"))
        self.made_call = self.made_call or call is not None
        for node in (n for target in stmt.targets for n in walk(target)):
            if isinstance(node, ast.Name):
                state.inner.pop(node.id, None)
        return state

    def _return(self, value: ast.expr | None, stmt: ast.stmt, state: _State) -> None:
        if value is None:
            return
        if isinstance(value, ast.IfExp):
            self._uses(value.test, stmt, state)
            self._return(value.body, stmt, state)
            self._return(value.orelse, stmt, state)
            return
        if isinstance(value, ast.Name) and value.id in state.inner:
            self.returns.append(True)
            return
        if self.inner_call(value):
            self.made_call = True
            self.returns.append(True)
            return
        container = isinstance(value, ast.Call) and (self.chain(value.func) or ("",))[-1].endswith("Output")
        if container and self._held(value, state):
            self.returns.append(True)
            return
        self.returns.append(False)
        self._uses(value, stmt, state)

    def _if(self, stmt: ast.If, state: _State) -> _State | None:
        rank = _rank_test(stmt.test, state)
        if rank is not None:
            body = self.block(stmt.body, state.copy(last_only=state.last_only or rank[0]))
            orelse = self.block(stmt.orelse, state.copy(last_only=state.last_only or rank[1]))
            return _merge(body, orelse)
        config = self.is_config(stmt.test) and not self._mentions(stmt.test, state)
        if not config:
            self._uses(stmt.test, stmt, state)
        depth = state.depth + (1 if config else 0)
        body = self.block(stmt.body, state.copy(depth=depth))
        orelse = self.block(stmt.orelse, state.copy(depth=depth))
        merged = _merge(body, orelse)
        return replace(merged, depth=state.depth) if merged else None

    def _held(self, node: ast.expr, state: _State) -> bool:
        """Whether every use of the inner output in `node` is the output itself, stored as an
        element, an argument or a dict value of the outer literal or call (or of a dict in it)."""
        slots: list[ast.AST] = []
        if isinstance(node, ast.Call):
            slots = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Dict):
            slots = list(node.values)
        elif isinstance(node, (ast.List, ast.Tuple)):
            slots = list(node.elts)
        bare = {id(x) for x in slots} | {
            id(v) for x in slots if isinstance(x, ast.Dict) for v in x.values
        }
        uses = [n for n in walk(node) if isinstance(n, ast.Name) and n.id in state.inner]
        nested = [n for n in walk(node) if self.inner_call(n) and n is not node]
        return bool(uses) and not nested and all(id(n) in bare for n in uses)

    def _mentions(self, node: ast.AST, state: _State) -> bool:
        return any(isinstance(n, ast.Name) and n.id in state.inner and isinstance(n.ctx, ast.Load) for n in walk(node))

    def _uses(self, node, stmt: ast.stmt, state: _State) -> None:
        """An expression that reads the inner output (a local holding it, or an inner call
        nested in a larger expression) alters it, unless only the last rank gets here or the
        output was produced outside the configuration condition this runs under."""
        if state.last_only or self.found:
            return
        for item in node if isinstance(node, list) else [node]:
            nodes = walk(item)
            chosen = {id(b) for n in nodes if isinstance(n, ast.IfExp) for b in (n.body, n.orelse)}
            indexed = {id(n.value) for n in nodes if isinstance(n, ast.Subscript) and _position(n.slice)}
            for n in nodes:
                how = "indexed" if id(n) in indexed else "transformed"
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in state.inner:
                    inner = state.inner[n.id]
                    if inner.depth < state.depth:
                        continue
                    insert = self._insert_after(inner, stmt)
                    self.found.append(AlteredOutput(n.id, inner.line, stmt.lineno, insert, inner.target, how))
                    return
                if isinstance(n, ast.Call) and self.inner_call(n) and n is not item and id(n) not in chosen:
                    self.made_call = True
                    self.found.append(AlteredOutput("", stmt.lineno, stmt.lineno, 0, self.chain(n.func) or (), how))
                    return


    def _insert_after(self, inner: _Inner, stmt: ast.stmt) -> int:
        """Where `if not get_pp_group().is_last_rank: return <var>` goes: after the inner call
        when that is a top-level statement, else after the top-level statement that precedes
        the alteration (the paths have joined there); 0 when neither is at the top level."""
        if inner.top:
            return inner.end
        at = next((i for i, s in enumerate(self.top) if s is stmt), 0)
        return (self.top[at - 1].end_lineno or 0) if at > 0 else 0


def returns_tuple(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every `return` of `fn` (not of a function nested in it) gives a tuple literal: an
    inner model that does so on every rank (`return IntermediateTensors(...), None`) may be unpacked."""
    found = False
    pending: list[ast.AST] = list(fn.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.expr)):
            continue  # a return is a statement: no expression holds one
        if isinstance(node, ast.Return):
            if not isinstance(node.value, ast.Tuple):
                return False
            found = True
        pending.extend(ast.iter_child_nodes(node))
    return found


def _merge(a: _State | None, b: _State | None) -> _State | None:
    """Paths rejoin: a local holds the inner output if it does on either path."""
    if a is None or b is None:
        return a or b
    inner = {**b.inner, **a.inner}
    return _State(inner, a.last_only and b.last_only, min(a.depth, b.depth))


def _rank_test(test: ast.expr, state: _State) -> tuple[bool, bool] | None:
    """(the body runs on the last rank only, the `else` does), for a test that tells ranks
    apart: `...is_last_rank`, or `isinstance(h, T)` on the inner output, which is
    IntermediateTensors exactly on non-last ranks; None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _rank_test(test.operand, state)
        return None if inner is None else (inner[1], inner[0])
    if isinstance(test, ast.Attribute) and test.attr == "is_last_rank":
        return True, False
    if isinstance(test, ast.Name) and "last_rank" in test.id:
        return True, False
    if (
        isinstance(test, ast.Call) and getattr(test.func, "id", "") == "isinstance" and len(test.args) == 2
        and isinstance(test.args[0], ast.Name) and test.args[0].id in state.inner
    ):
        holds_on_nonlast = "IntermediateTensors" in unparse(test.args[1])
        return (False, True) if holds_on_nonlast else (True, False)
    if isinstance(test, ast.BoolOp):
        parts = [_rank_test(v, state) for v in test.values]
        if all(p is None for p in parts):
            return None
        known = [p or (False, False) for p in parts]
        if isinstance(test.op, ast.And):
            return any(p[0] for p in known), all(p[1] for p in known) and None not in parts
        return all(p[0] for p in known) and None not in parts, any(p[1] for p in known)
    return None


def _position(index: ast.expr) -> bool:
    """An integer index (`out[0]`, `out[-1]`): IntermediateTensors answers it with None."""
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        index = index.operand
    return isinstance(index, ast.Constant) and type(index.value) is int


def _unpacks(targets: list[ast.expr]) -> bool:
    """Whether one of an assignment's targets unpacks the value (`h, extra = ...`, `h, *rest = ...`)."""
    return any(isinstance(t, (ast.Tuple, ast.List)) for t in targets)


def _values(stmt: ast.stmt) -> list:
    """What a simple statement evaluates: a call it makes at the top (`self.model(...)` alone, or
    stored into several names or attributes) hands the output on without changing it."""
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return [stmt.value] if stmt.value is not None else []
    return [stmt]
