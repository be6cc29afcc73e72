"""The classes a module-level `__getattr__` (PEP 562) can return, for each name asked for.

A package that picks its implementation at run time (`if current_platform.is_rocm(): from
.amd.model import X`) binds the name under `TYPE_CHECKING` only, or not at all: what the runtime
gets is what `__getattr__` returns, on any platform. Read: `return X` of a name imported in the
function or the module, `return mod.X`, `return getattr(mod, name)`, `return {"X": X, ...}[name]`
and conditional expressions of those; tests of the asked name (`name == "X"`, `name in {...}`)
narrow what a branch serves, and a branch that always returns serves no name it tested to what
follows it. Tests of anything else (the platform) keep every branch.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..facts import LazyExport

Bindings = dict[str, list[str]]
"""Local name -> the dotted names it may stand for (`X` -> `pkg.amd.model.X`)."""


@dataclass(frozen=True)
class _Served:
    """The names a branch serves: those of `only` (None: any), except `never`."""

    only: frozenset[str] | None = None
    never: frozenset[str] = frozenset()

    def within(self, names: frozenset[str]) -> _Served:
        return _Served(names if self.only is None else self.only & names, self.never)

    def without(self, names: frozenset[str]) -> _Served:
        return _Served(self.only, self.never | names)


def exports(fn: ast.FunctionDef | ast.AsyncFunctionDef, imported: Bindings,
            base: Callable[[ast.ImportFrom], str]) -> list[LazyExport]:
    """What `fn` (a module's `__getattr__`) returns; `imported` binds the module's own imports,
    `base` gives the absolute module of a (relative) `from` import."""
    params = fn.args.posonlyargs + fn.args.args
    if not params:
        return []
    bindings = {**imported, **_local_imports(fn, base)}
    found: list[LazyExport] = []
    _block(fn.body, _Served(), params[0].arg, bindings, found)
    return list(dict.fromkeys(found))


def module_bindings(imports: dict[str, list[tuple[str, str | None]]]) -> Bindings:
    """The module's `ModuleFacts.imports` as dotted names."""
    return {local: [f"{target}.{attr}" if attr else target for target, attr in bound] for local, bound in imports.items()}


def _local_imports(fn: ast.AST, base: Callable[[ast.ImportFrom], str]) -> Bindings:
    bound: Bindings = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                bound.setdefault(local, []).append(alias.name if alias.asname else local)
        elif isinstance(node, ast.ImportFrom):
            module = base(node)
            for alias in node.names:
                if alias.name != "*":
                    bound.setdefault(alias.asname or alias.name, []).append(f"{module}.{alias.name}")
    return bound


def _block(body: list[ast.stmt], served: _Served, param: str, bindings: Bindings, found: list[LazyExport]) -> None:
    for node in body:
        if isinstance(node, ast.Return) and node.value is not None:
            found.extend(_returned(node.value, served, param, bindings))
        elif isinstance(node, ast.If):
            tested = _tested(node.test, param)
            if tested is None:
                _block(node.body, served, param, bindings, found)
                _block(node.orelse, served, param, bindings, found)
                continue
            names, positive = tested
            inside, outside = (served.within(names), served.without(names))[:: 1 if positive else -1]
            _block(node.body, inside, param, bindings, found)
            _block(node.orelse, outside, param, bindings, found)
            if _always_leaves(node.body):
                served = outside
        elif isinstance(node, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
            _block(node.body, served, param, bindings, found)
        elif isinstance(node, ast.Try):
            for inner in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                _block(inner, served, param, bindings, found)


def _tested(test: ast.expr, param: str) -> tuple[frozenset[str], bool] | None:
    """The names a test of the asked name is about, and whether it lets them through (`name ==
    "X"`, `name in ("X", "Y")`) or keeps them out (`!=`, `not in`); None for a test of anything
    else, or of names that are not literal."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and _is(test.left, param)):
        return None
    right, op = test.comparators[0], test.ops[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        elements = [right]
    elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Set, ast.List, ast.Tuple)):
        elements = right.elts
    elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, ast.Dict) and None not in right.keys:
        elements = [k for k in right.keys if k is not None]
    else:
        return None
    texts = _texts(elements)
    if not texts or len(texts) != len(elements):
        return None
    return frozenset(texts), isinstance(op, (ast.Eq, ast.In))


def _always_leaves(body: list[ast.stmt]) -> bool:
    """Whether a block ends in `return` or `raise` on every path."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_leaves(last.body) and _always_leaves(last.orelse)


def _returned(expr: ast.expr, served: _Served, param: str, bindings: Bindings) -> Iterator[LazyExport]:
    names = tuple(sorted(served.only)) if served.only is not None else None
    never = tuple(sorted(served.never))
    if isinstance(expr, ast.IfExp):
        yield from _returned(expr.body, served, param, bindings)
        yield from _returned(expr.orelse, served, param, bindings)
    elif isinstance(expr, ast.BoolOp):
        for value in expr.values:
            yield from _returned(value, served, param, bindings)
    elif isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Dict) and _is(expr.slice, param):
        for key, value in zip(expr.value.keys, expr.value.values, strict=False):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield from _returned(value, served.within(frozenset([key.value])), param, bindings)
    elif isinstance(expr, ast.Call) and _is(expr.func, "getattr") and len(expr.args) >= 2:
        attr = None if _is(expr.args[1], param) else next(iter(_texts(expr.args[1:2])), "")
        for module in _dotted(expr.args[0], bindings) if attr != "" else ():
            yield LazyExport(module, attr, names, never)
    else:
        for dotted in _dotted(expr, bindings):
            module, _, attr = dotted.rpartition(".")
            if module:
                yield LazyExport(module, attr, names, never)


def _dotted(expr: ast.expr, bindings: Bindings) -> list[str]:
    """The dotted names a `Name` or attribute chain may stand for, through `bindings`."""
    if isinstance(expr, ast.Name):
        return bindings.get(expr.id, [])
    if isinstance(expr, ast.Attribute):
        return [f"{head}.{expr.attr}" for head in _dotted(expr.value, bindings)]
    return []


def _texts(nodes: list[ast.expr]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
