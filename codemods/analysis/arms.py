"""The arms of an expression assigned to `make_empty_intermediate_tensors`, each to be resolved
as a producer of its own: `A.make_empty_intermediate_tensors if cond else (lambda: None)`,
`getattr(A, "make_empty_intermediate_tensors", None) or B`, `cond and A.make_... or B`.

An arm is taken under the configuration conditions that lead to it (its guard) and, for a
`hasattr(obj, ...)` test or a `getattr(obj, ..., None)` fallback, when `obj` does or does not
define a producer (its needs, told only once classes are resolved). An operand of `or` that is
truthy whenever it is evaluated (an attribute, a lambda, a call) ends the chain: the operands
after it never run. A test that is neither leaves the whole expression one arm, not understood.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..facts import Guard, Needs
from .syntax import ATTR, condition, const_str, dotted

_Test = tuple[Guard, Needs]


@dataclass(frozen=True)
class Arm:
    """One arm: the expression it assigns, under its guard and needs."""

    value: ast.expr
    guard: Guard = ()
    needs: Needs = ()


def arms(value: ast.expr) -> list[Arm]:
    """The arms of `value`; `[Arm(value)]` when it is no conditional expression, or one that
    cannot be split."""
    split = _split(value, ((), ()))
    return split if split is not None else [Arm(value)]


def _split(value: ast.expr, under: _Test) -> list[Arm] | None:
    if isinstance(value, ast.IfExp):
        test = _test(value.test)
        if test is None:
            return None
        body = _split(value.body, _join(under, test))
        orelse = _split(value.orelse, _join(under, _negate(test)))
        return None if body is None or orelse is None else body + orelse
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return _either(value.values, under)
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And):
        return _either([value], under)
    return [Arm(value, *under)]


def _either(operands: list[ast.expr], under: _Test) -> list[Arm] | None:
    """`a or b or ...`: each operand under the conditions that make every one before it falsy."""
    found: list[Arm] = []
    for index, operand in enumerate(operands):
        last = index == len(operands) - 1
        if _falsy(operand) and not last:
            continue
        delegated = _optional(operand)
        if delegated is not None:
            obj, located = delegated
            found.append(Arm(located, *_join(under, ((), ((obj, True),)))))
            under = _join(under, ((), ((obj, False),)))
            continue
        if isinstance(operand, ast.BoolOp) and isinstance(operand.op, ast.And):
            *tests, result = operand.values
            test = _test(tests[0]) if len(tests) == 1 else None
            if test is None:
                return None
            taken = _split(result, _join(under, test))
            if taken is None:
                return None
            found += taken
            under = _join(under, _negate(test))
            if last:  # the falsy test is the value
                found.append(Arm(ast.Constant(None, lineno=operand.lineno, col_offset=operand.col_offset), *under))
            continue
        taken = _split(operand, under)
        if taken is None:
            return None
        return found + taken
    return found


def _test(test: ast.expr) -> _Test | None:
    """A configuration condition, or `hasattr(obj, "make_empty_intermediate_tensors")`; None for
    any other test."""
    polarity = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, polarity = test.operand, not polarity
    obj = _probed(test, "hasattr")
    if obj is not None:
        return (), ((obj, polarity),)
    cond = condition(test)
    return (((cond[0], cond[1] == polarity),), ()) if cond else None


def _optional(operand: ast.expr) -> tuple[tuple[str, ...], ast.expr] | None:
    """`getattr(obj, "make_empty_intermediate_tensors", None)`: the object, and the delegation it is
    when the object defines one."""
    obj = _probed(operand, "getattr")
    if obj is None or not isinstance(operand, ast.Call) or len(operand.args) != 3 or not _falsy(operand.args[2]):
        return None
    return obj, ast.Attribute(operand.args[0], ATTR, ast.Load(), lineno=operand.lineno, col_offset=operand.col_offset)


def _probed(node: ast.expr, probe: str) -> tuple[str, ...] | None:
    """The object of `hasattr(obj, ATTR)` or `getattr(obj, ATTR, ...)`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == probe):
        return None
    if len(node.args) < 2 or const_str(node.args[1]) != ATTR:
        return None
    return dotted(node.args[0])


def _falsy(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _join(a: _Test, b: _Test) -> _Test:
    return a[0] + b[0], a[1] + b[1]


def _negate(test: _Test) -> _Test:
    guard, needs = test
    return tuple((c, not p) for c, p in guard), tuple((o, not p) for o, p in needs)
