"""Local names bound to a class (`Cls = WhisperCausalEncoder`, `Cls = partial(WhisperEncoder, ...)`):
calling one builds each class it may name. Shared by the analysis and the families' facts, so it
imports neither."""

from __future__ import annotations

import ast

from .walk import dotted_name

PARTIAL = "partial"
"""`functools.partial`: `partial(Cls, ...)` builds a `Cls`."""
COMPOUND = (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.Try)


def class_aliases(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[str, ...]]:
    """The local names `fn` binds to a class, in any branch, each with the classes it may name
    (in source order)."""
    found: dict[str, list[str]] = {}
    statements: list[ast.stmt] = fn.body[::-1]  # popped in source order
    while statements:
        stmt = statements.pop()
        if isinstance(stmt, ast.If):
            statements.extend((stmt.body + stmt.orelse)[::-1])
        elif isinstance(stmt, COMPOUND):
            statements.extend(_inner(stmt)[::-1])
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            classes = aliased(stmt.value)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets if classes else ():
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).extend(classes)
    return {name: tuple(dict.fromkeys(classes)) for name, classes in found.items()}


def aliased(value: ast.expr) -> list[str]:
    """The classes an expression names: a capitalized dotted name, `partial(<class>, ...)`, or
    either branch of a conditional expression."""
    if isinstance(value, ast.IfExp):
        return aliased(value.body) + aliased(value.orelse)
    if isinstance(value, ast.Call):
        func = value.func  # most values are calls: the last name is read before the whole chain
        last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if last != PARTIAL or not value.args or dotted_name(func) is None:
            return []
        value = value.args[0]
    chain = dotted_name(value)
    return [".".join(chain)] if chain and chain[0] != "self" and chain[-1][:1].isupper() else []


def _inner(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements nested in a `with`, loop or `try`, in source order."""
    blocks = [getattr(stmt, name, []) for name in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(stmt, "handlers", [])]
    return [inner for block in blocks for inner in block]
