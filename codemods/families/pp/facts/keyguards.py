"""Reads of a received key guarded by a value only the first rank has (PP015): plain facts from
one class's AST.

On a non-first rank, a parameter of the forward that only the first rank's caller fills (or that
only the first-rank branch computes) is None: `if per_layer_inputs is not None:
per_layer_inputs = intermediate_tensors["per_layer_inputs"]` never reads what the previous rank
sent. The received dict itself says whether the key came (`"k" in intermediate_tensors.tensors`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ....vllm_names import FIRST_RANK, PARAM
from ....walk import dotted_name, walk


@dataclass(frozen=True)
class KeyGuard:
    """In `method`, on the non-first-rank path, `if <local> is not None:` (at `line`, `column`)
    guards the read of the received key `key` (at `read_line`) from `tensors` (the method's
    `intermediate_tensors` parameter), where `local` is a parameter of the method that defaults to
    None and nothing on that path sets before the guard. `exact` when the test is only that
    comparison and the body only `<local> = <tensors>["<key>"]` (or `.tensors["<key>"]`)."""

    method: str
    local: str
    key: str
    tensors: str
    line: int
    column: int
    read_line: int
    exact: bool


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can hold such a guard (a text test before any walk)."""
    return FIRST_RANK in text and PARAM in text and "is not None" in text


def key_guards(node: ast.ClassDef, lines: list[str]) -> tuple[KeyGuard, ...]:
    found: list[KeyGuard] = []
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        text = "\n".join(lines[item.lineno - 1 : item.end_lineno])
        if FIRST_RANK not in text or "is not None" not in text:
            continue
        defaults = _none_defaults(item.args)
        if PARAM not in defaults and PARAM not in {a.arg for a in (*item.args.args, *item.args.kwonlyargs)}:
            continue
        nodes = walk(item)
        for rank_test in (n for n in nodes if isinstance(n, ast.If)):
            branches = _branches(rank_test.test, rank_test)
            if branches is None:
                continue
            first, later = branches
            found.extend(_guards(item, later, first, defaults, nodes))
    return tuple(found)


def _none_defaults(args: ast.arguments) -> set[str]:
    """The parameters whose default is None."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return {a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is None}


def _branches(test: ast.expr, node: ast.If) -> tuple[list[ast.stmt], list[ast.stmt]] | None:
    """(first-rank statements, later-rank statements) of `if <group>.is_first_rank:` or of its
    negation; None for any other test."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if isinstance(inner, ast.Call) and not inner.args:
        inner = inner.func  # `is_first_rank()` in a fork that made it a method
    if not (isinstance(inner, ast.Attribute) and inner.attr == FIRST_RANK):
        return None
    return (node.orelse, node.body) if negated else (node.body, node.orelse)


def _guards(fn: ast.FunctionDef | ast.AsyncFunctionDef, later: list[ast.stmt], first: list[ast.stmt],
            defaults: set[str], nodes: list[ast.AST]) -> list[KeyGuard]:
    found = []
    inside_first = {id(n) for stmt in first for n in walk(stmt)}
    for guard in (n for stmt in later for n in walk(stmt) if isinstance(n, ast.If)):
        local = _tested_local(guard.test)
        if local is None or local not in defaults or local == PARAM:
            continue
        inside_guard = {id(n) for stmt in guard.body for n in walk(stmt)}
        if any(
            _binds(n, local) and getattr(n, "lineno", 0) < guard.lineno
            and id(n) not in inside_first and id(n) not in inside_guard
            for n in nodes
        ):
            continue
        read = next((r for stmt in guard.body for r in walk(stmt) if isinstance(r, ast.Subscript) and _received_key(r)), None)
        if read is None:
            continue
        key = _received_key(read)
        assert key is not None
        exact = (
            isinstance(guard.test, ast.Compare) and not guard.orelse and len(guard.body) == 1
            and isinstance(guard.body[0], ast.Assign) and len(guard.body[0].targets) == 1
            and isinstance(guard.body[0].targets[0], ast.Name) and guard.body[0].targets[0].id == local
            and guard.body[0].value is read
        )
        found.append(KeyGuard(fn.name, local, key, PARAM, guard.lineno, guard.col_offset, read.lineno, exact))
    return found


def _tested_local(test: ast.expr) -> str | None:
    """`x` of a test that holds `x is not None` (alone, or as a term of `and`)."""
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for term in terms:
        if (
            isinstance(term, ast.Compare) and isinstance(term.left, ast.Name) and len(term.ops) == 1
            and isinstance(term.ops[0], ast.IsNot) and isinstance(term.comparators[0], ast.Constant)
            and term.comparators[0].value is None
        ):
            return term.left.id
    return None


def _binds(node: ast.AST, name: str) -> bool:
    """Whether `node` assigns `name` (plainly, by augmentation, in a loop or a `with`, by `:=`)."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in walk(t))


def _received_key(node: ast.Subscript) -> str | None:
    """`k` of `intermediate_tensors["k"]` or `intermediate_tensors.tensors["k"]`."""
    holder = dotted_name(node.value)
    if holder not in ([PARAM], [PARAM, "tensors"]):
        return None
    key = node.slice
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
