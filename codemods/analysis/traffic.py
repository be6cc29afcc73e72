"""`FunctionFacts` of one method: the keys it reads, sends or allocates, each with its
configuration guard, the calls that hand `intermediate_tensors` on, and unsupported accesses."""

from __future__ import annotations

import ast
from typing import TypeGuard

from ..facts import Access, Call, FunctionFacts, Guard, KeyUse, Param
from ..unparse import unparse
from ..walk import CHILDLESS, children
from .altered import Flow, returns_tuple
from .syntax import (
    ATTR,
    AUX_COLLECTORS,
    AUX_PACKERS,
    AUX_PATTERN,
    IT,
    IT_CLASS,
    Function,
    always_exits,
    blocks,
    condition,
    const_str,
    dotted,
)


class FunctionAnalyzer:
    """Keys read / sent / allocated in one function, with their configuration guards.

    Statements are visited in order, so the local-variable maps below describe what each local
    holds at the statement being visited (an assignment of something else forgets it). `producer`
    is True for a `make_empty_intermediate_tensors` implementation: what it returns is allocated,
    not sent.
    """

    def __init__(self, fn: Function, producer: bool) -> None:
        self.fn = fn
        self.producer = producer
        self.facts = FunctionFacts(fn.name, fn.lineno, fn.col_offset, params=params_of(fn))
        self.aliases = {IT}
        """Names bound to the received tensors: the parameter and its copies (`it = intermediate_tensors`).
        Subscripting one is a read; passing one to a call hands the tensors on."""
        self.kwargs_dicts: set[str] = set()
        """Dict literals holding an alias as a value (`kw = {"intermediate_tensors": it}`):
        `f(**kw)` hands the tensors on too."""
        self.local_dicts: dict[str, list[KeyUse]] = {}
        """Local dict literal -> its keys, grown by `d["k"] = ...` (and an unknown key by
        `d.update(...)`): what `IntermediateTensors(d)` sends."""
        self.it_vars: dict[str, list[KeyUse]] = {}
        """Local bound to an `IntermediateTensors(...)` being built (or to a delegated allocation,
        with no keys of its own) -> its keys, grown by `x["k"] = ...`: what `return x` sends."""
        self.relays: dict[str, tuple[tuple[str, ...], int]] = {}
        """Local assigned the result of a `self.<sub>(...)` call that is not handed the tensors ->
        (callee chain, line): `return local` relays what that submodule sends."""
        self.self_aliases: dict[str, tuple[str, ...]] = {}
        """Local bound to a `self` attribute (`decoder = self.decoder`) -> the attribute's chain,
        so a call through the local resolves to the submodule."""

    def run(self) -> FunctionFacts:
        self._block(self.fn.body, ())
        if not self.producer:
            flow = Flow(self._passes_it, dotted, lambda test: condition(test) is not None).run(self.fn)
            self.facts.altered, self.facts.returns_inner = flow.found, flow.passes_through
            self.facts.returns_tuple = returns_tuple(self.fn)
        return self.facts

    def _block(self, body: list[ast.stmt], guard: Guard) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.If):
                cond = condition(stmt.test)
                self._expr(stmt.test, guard)
                self._block(stmt.body, guard + ((cond,) if cond else ()))
                negated = ((cond[0], not cond[1]),) if cond else ()
                self._block(stmt.orelse, guard + negated)
                if cond and always_exits(stmt.body) and not stmt.orelse:
                    guard = guard + negated
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
                for child in children(stmt):
                    if isinstance(child, ast.expr):
                        self._expr(child, guard)
                for block in blocks(stmt):
                    self._block(block, guard)
                continue
            self._statement(stmt, guard)

    def _statement(self, stmt: ast.stmt, guard: Guard) -> None:
        if isinstance(stmt, ast.Assign):
            self._assignment(stmt.targets, stmt.value, guard)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assignment([stmt.target], stmt.value, guard)
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            self._return(stmt.value, guard)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            chain = dotted(call.func) or ()
            if len(chain) == 2 and chain[0] in self.local_dicts and chain[1] == "update":
                self.local_dicts[chain[0]].append(KeyUse(None, stmt.lineno, guard))
        self._expr(stmt, guard, skip_returned=isinstance(stmt, ast.Return))

    def _assignment(self, targets: list[ast.expr], value: ast.expr, guard: Guard) -> None:
        for target in targets:
            if isinstance(target, ast.Name):
                relay = self._relay(value)
                if relay:
                    self.relays[target.id] = (relay, value.lineno)
                else:
                    self.relays.pop(target.id, None)
                chain = dotted(value) if isinstance(value, ast.Attribute) else None
                if chain and chain[0] == "self":
                    self.self_aliases[target.id] = chain
                else:
                    self.self_aliases.pop(target.id, None)
                if isinstance(value, ast.Name) and value.id in self.aliases:
                    self.aliases.add(target.id)
                elif isinstance(value, ast.Dict):
                    self.local_dicts[target.id] = self._dict_keys(value, guard)
                    if any(isinstance(v, ast.Name) and v.id in self.aliases for v in value.values):
                        self.kwargs_dicts.add(target.id)
                elif _is_it_ctor(value):
                    self.it_vars[target.id] = self._ctor_keys(value, guard)
                elif self._is_delegated_alloc(value):
                    self.it_vars[target.id] = []
            elif isinstance(target, ast.Subscript) and isinstance(target.value, (ast.Name, ast.Attribute)):
                owner: ast.expr = target.value
                if isinstance(owner, ast.Attribute) and owner.attr == "tensors":
                    owner = owner.value
                if isinstance(owner, ast.Name):
                    key = const_str(target.slice)
                    use = KeyUse(key, target.lineno, guard)
                    if owner.id in self.local_dicts:
                        self.local_dicts[owner.id].append(use)
                    elif owner.id in self.it_vars:
                        self.it_vars[owner.id].append(use)

    def _return(self, value: ast.expr, guard: Guard) -> None:
        keys: list[KeyUse] | None = None
        if _is_it_ctor(value):
            keys = self._ctor_keys(value, guard)
        elif isinstance(value, ast.Name) and value.id in self.it_vars:
            keys = [KeyUse(u.key, u.line, guard + u.guard[len(guard):]) for u in self.it_vars[value.id]]
        if keys is not None:
            (self.facts.allocs if self.producer else self.facts.sends).extend(keys)
            arg = value.args[0] if isinstance(value, ast.Call) and value.args else None
            if self.producer and isinstance(arg, ast.Dict):
                self.facts.alloc_dicts.append((arg.lineno, arg.col_offset))
        if self.producer and self._is_delegated_alloc(value):
            return
        if isinstance(value, ast.Call) and self._passes_it(value):
            chain = self._callee(value.func)
            if chain:
                self.facts.calls.append(Call(chain, value.lineno, guard, returned=True))
        elif not self.producer:
            relay = self._relay(value)
            if relay:
                chain, line = relay, value.lineno
            elif isinstance(value, ast.Name) and value.id in self.relays:
                chain, line = self.relays[value.id]
            else:
                return
            self.facts.calls.append(Call(chain, line, guard, returned=True, relay=True))

    def _relay(self, value: ast.expr) -> tuple[str, ...] | None:
        """`self.sub(...)` / `self.sub.forward(...)` not handed intermediate_tensors: its chain."""
        if not isinstance(value, ast.Call) or self._passes_it(value):
            return None
        chain = self._callee(value.func)
        return chain if chain and len(chain) >= 2 and chain[0] == "self" else None

    def _callee(self, func: ast.expr) -> tuple[str, ...] | None:
        """The callee's chain, a local alias of a `self` attribute spelled out
        (`decode = self.decoder` ... `decode.plan(...)` -> ("self", "decoder", "plan"))."""
        chain = dotted(func)
        if chain and chain[0] in self.self_aliases:
            return self.self_aliases[chain[0]] + chain[1:]
        return chain

    def _is_delegated_alloc(self, value: ast.expr) -> bool:
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
            return False
        chain = dotted(value.func)
        if chain and chain[-1] == ATTR and len(chain) > 1:
            self.facts.alloc_delegations.append(Call(chain[:-1], value.lineno))
            return True
        return False

    def _ctor_keys(self, call: ast.Call, guard: Guard) -> list[KeyUse]:
        arg = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "tensors"), None
        )
        if isinstance(arg, ast.Dict):
            return self._dict_keys(arg, guard)
        if isinstance(arg, ast.Name) and arg.id in self.local_dicts:
            return list(self.local_dicts[arg.id])
        if isinstance(arg, ast.Call) and dotted(arg.func) == ("dict",):
            return [KeyUse(k.arg, call.lineno, guard) for k in arg.keywords]
        return [KeyUse(None, call.lineno, guard)]

    def _dict_keys(self, node: ast.Dict, guard: Guard) -> list[KeyUse]:
        """Literal keys; `**spread` is unknown, except EAGLE-3's aux packing, whose keys follow
        `AUX_PATTERN` (the runner allocates them itself, vllm-pp-contract A.2.5)."""
        return [
            KeyUse(
                const_str(k) if k is not None else _spread_pattern(v),
                getattr(k, "lineno", node.lineno) if k is not None else v.lineno,
                guard,
            )
            for k, v in zip(node.keys, node.values, strict=False)
        ]

    def _passes_it(self, call: ast.Call) -> bool:
        for arg in [*call.args, *[k.value for k in call.keywords]]:
            if isinstance(arg, ast.Name) and arg.id in self.aliases:
                return True
            if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id in self.aliases:
                return True
        return any(
            k.arg is None and isinstance(k.value, ast.Name) and k.value.id in self.kwargs_dicts
            for k in call.keywords
        )

    def _expr(self, root: ast.AST, guard: Guard, skip_returned: bool = False) -> None:
        """Visit an expression tree; `a if self.flag else b` guards each branch by the flag."""
        stack: list[tuple[ast.AST, Guard]] = [(root, guard)]
        while stack:
            node, where = stack.pop()
            if isinstance(node, ast.IfExp):
                cond = condition(node.test)
                stack.append((node.test, where))
                stack.append((node.body, where + ((cond,) if cond else ())))
                stack.append((node.orelse, where + (((cond[0], not cond[1]),) if cond else ())))
                continue
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                self._read(node, where)
            elif isinstance(node, ast.Call):
                self._call(node, where, root, skip_returned)
            elif isinstance(node, ast.Compare):
                for op, right in zip(node.ops, node.comparators, strict=False):
                    if isinstance(op, (ast.In, ast.NotIn)) and self._is_alias(right):
                        self.facts.accesses.append(
                            Access("in", node.lineno, node.col_offset, unparse(node))
                        )
            stack.extend((child, where) for child in children(node) if type(child) not in CHILDLESS)

    def _is_alias(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.aliases

    def _read(self, node: ast.Subscript, guard: Guard) -> None:
        owner = node.value
        if isinstance(owner, ast.Attribute) and owner.attr == "tensors":
            owner = owner.value
        if not self._is_alias(owner):
            return
        if isinstance(node.slice, ast.Slice):
            return
        self.facts.reads.append(KeyUse(const_str(node.slice), node.lineno, guard))

    def _call(self, node: ast.Call, guard: Guard, root: ast.AST, skip_returned: bool) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "keys" and self._is_alias(func.value):
            self.facts.accesses.append(Access("keys", node.lineno, node.col_offset, unparse(node)))
            return
        if isinstance(func, ast.Attribute) and func.attr == "get" and self._is_alias(func.value):
            self.facts.accesses.append(
                Access("get", node.lineno, node.col_offset, unparse(node))
            )
            self.facts.reads.append(
                KeyUse(const_str(node.args[0]) if node.args else None, node.lineno, guard)
            )
            return
        if skip_returned and isinstance(root, ast.Return) and node is root.value:
            return
        if self._passes_it(node):
            chain = self._callee(func)
            if chain and chain[-1] in AUX_COLLECTORS:
                self.facts.reads.append(KeyUse(AUX_PATTERN, node.lineno, guard))
            elif chain:
                self.facts.calls.append(Call(chain, node.lineno, guard))


def takes_three(params: list[Param], bound: bool = False) -> bool:
    """Whether a callable with these parameters accepts the runner's call
    `(batch_size, dtype, device)`; `bound` drops `self`."""
    positional = [p for p in params if p.kind in ("posonly", "positional")][1 if bound else 0 :]
    return any(p.kind == "vararg" for p in params) or len(positional) >= 3


def params_of(fn: Function | ast.Lambda) -> list[Param]:
    args = fn.args
    out: list[Param] = []
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=False)):
        kind = "posonly" if index < len(args.posonlyargs) else "positional"
        out.append(_param(arg, kind, default))
    if args.vararg:
        out.append(_param(args.vararg, "vararg", None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        out.append(_param(arg, "kwonly", default))
    if args.kwarg:
        out.append(_param(args.kwarg, "kwarg", None))
    return out


def _param(arg: ast.arg, kind: str, default: ast.expr | None) -> Param:
    return Param(
        name=arg.arg,
        kind=kind,
        line=arg.lineno,
        column=arg.col_offset,
        has_default=default is not None,
        annotation=unparse(arg.annotation) if arg.annotation is not None else None,
    )

def _spread_pattern(value: ast.expr) -> str | None:
    if isinstance(value, ast.Call) and (dotted(value.func) or ("",))[-1] in AUX_PACKERS:
        return AUX_PATTERN
    return None


def _is_it_ctor(node: ast.expr) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and (dotted(node.func) or ("",))[-1] == IT_CLASS

