"""The fused layers a class builds (PM004): `self.<attr> = QKVParallelLinear(...)` (three outputs,
q, k and v) or `self.<attr> = MergedColumnParallelLinear(..., output_sizes, ...)` (one output per
element of `output_sizes`), with the number of outputs when the source says it: a list or tuple
literal, `[size] * n`, or a local name the method assigns once to one of those.

Every other assignment to such an attribute in the class is kept too, with no kind: a layer
built otherwise on another path (`A(...) if c else B(...)`, a helper's return), whose number of
outputs is not known.

Plain data from one class's AST, picklable for the facts cache.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ....walk import statements, walk

QKV = "QKVParallelLinear"
MERGED = "MergedColumnParallelLinear"
KINDS = (QKV, MERGED)
OUTPUTS = "output_sizes"


@dataclass(frozen=True)
class Built:
    """`self.<attr> = ...` on `line`: `kind` is one of `KINDS` for a call of that class (its last
    dotted name), "" for anything else; `outputs` the layer's number of outputs, None when not
    known."""

    attr: str
    kind: str
    outputs: int | None
    line: int


def wanted(text: str) -> bool:
    return any(kind in text for kind in KINDS)


def fused_layers(node: ast.ClassDef, lines: list[str]) -> tuple[Built, ...] | None:
    found: list[Built] = []
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        text = "\n".join(lines[method.lineno - 1 : method.end_lineno])
        if "self." not in text:
            continue
        assigned = _locals(method) if MERGED in text else {}
        for stmt in statements([method]):
            target, value = _self_assignment(stmt)
            if target and isinstance(stmt, ast.stmt):
                found.append(_built(target, value, stmt.lineno, assigned))
    fused = {b.attr for b in found if b.kind}
    return tuple(b for b in found if b.attr in fused) or None


def _self_assignment(stmt: ast.AST) -> tuple[str, ast.expr | None]:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target: ast.expr = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target = stmt.target
    else:
        return "", None
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return target.attr, stmt.value
    return "", None


def _built(attr: str, value: ast.expr | None, line: int, assigned: dict[str, ast.expr]) -> Built:
    kind = _kind(value.func) if isinstance(value, ast.Call) else ""
    if kind not in KINDS or not isinstance(value, ast.Call):
        return Built(attr, "", None, line)
    if kind == QKV:
        return Built(attr, kind, 3, line)
    sizes = next((k.value for k in value.keywords if k.arg == OUTPUTS), value.args[1] if len(value.args) > 1 else None)
    if isinstance(sizes, ast.Name):
        sizes = assigned.get(sizes.id)
    return Built(attr, kind, _count(sizes), line)


def _kind(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _count(node: ast.expr | None) -> int | None:
    """The length of a list written as a literal or as `[...] * n` (`n * [...]`)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return None if any(isinstance(e, ast.Starred) for e in node.elts) else len(node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for items, times in ((node.left, node.right), (node.right, node.left)):
            length = _count(items) if isinstance(items, (ast.List, ast.Tuple)) else None
            if length is not None and isinstance(times, ast.Constant) and type(times.value) is int:
                return length * times.value
    return None


def _locals(method: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """The local names the method binds exactly once, by a plain assignment, to their values."""
    values: dict[str, list[ast.expr | None]] = {}
    for stmt in walk(method):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            plain = len(targets) == 1 and isinstance(targets[0], ast.Name)
        elif isinstance(stmt, (ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            targets, plain = [stmt.target], False
        else:
            continue
        for target in targets:
            for name in walk(target):
                if isinstance(name, ast.Name):
                    values.setdefault(name.id, []).append(stmt.value if plain else None)  # type: ignore[union-attr]
    return {name: found[0] for name, found in values.items() if len(found) == 1 and found[0] is not None}
