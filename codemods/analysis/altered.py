"""Where a forward alters what the inner model returned before a non-last rank could hand it
on unchanged (PP006)."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..facts import AlteredOutput
from .syntax import IT_CLASS, Function, condition, dotted


def altered_output(fn: Function, passes_it: Callable[[ast.Call], bool]) -> list[AlteredOutput]:
    """Where a forward transforms what an inner call returned, before any non-last-rank return.

    For each top-level `v = self.inner(..., intermediate_tensors, ...)`, looks at the statements
    after it: a guard (`if not get_pp_group().is_last_rank: return ...`, `if isinstance(v, ...):
    return ...`) or `return v` ends the search; a use of `v` under a configuration condition is
    skipped (it cannot be proven to run under pipeline parallelism); any other use of `v` is an
    alteration. `return self.head(self.inner(...))` is one too.
    """
    found: list[AlteredOutput] = []
    for index, stmt in enumerate(fn.body):
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call) and not passes_it(stmt.value):
            for inner in ast.walk(stmt.value):
                if isinstance(inner, ast.Call) and inner is not stmt.value and passes_it(inner):
                    found.append(AlteredOutput("", stmt.lineno, stmt.lineno, 0, dotted(inner.func) or ()))
                    break
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        if isinstance(stmt.value, ast.Call) and passes_it(stmt.value):
            line = _first_alteration(stmt.targets[0].id, fn.body[index + 1 :])
            if line:
                target = dotted(stmt.value.func) or ()
                found.append(AlteredOutput(stmt.targets[0].id, stmt.lineno, line, stmt.end_lineno or stmt.lineno, target))
    return found


def _first_alteration(name: str, body: list[ast.stmt]) -> int:
    def uses(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))

    for stmt in body:
        if isinstance(stmt, ast.If):
            test = ast.unparse(stmt.test)
            returns = any(isinstance(n, ast.Return) for n in ast.walk(stmt))
            if returns and ("is_last_rank" in test or IT_CLASS in test or f"isinstance({name}," in test):
                return 0
            if condition(stmt.test) is not None and not uses(stmt.test):
                continue
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) and stmt.value.id == name:
            return 0
        if uses(stmt):
            return stmt.lineno
    return 0

