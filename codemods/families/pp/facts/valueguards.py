"""The configuration under which a value is None or sent (PP012), written so that a layer's guard
and its model's guard compare.

A layer that returns `(hidden_states, None)` only when a flag is off, read by a model that sends
that value only when the flag is on, never sends None: the two guards exclude each other. The
layer and the model name the same flag in their own words (`self.config.flag`, `config.flag`,
`self.flag` set from `config.flag` in `__init__`), so each guard is rewritten in terms of the
model config before the rule compares them (`conditions.consistent`).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ....analysis.syntax import condition
from ....unparse import unparse
from ....walk import children

if TYPE_CHECKING:
    from ...base import Guard

CONFIG_CHAIN = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?:hf_|text_)?config\.(?=[A-Za-z_])")
"""`self.config.`, `vllm_config.model_config.hf_config.`, `config.` -> the model config's `config.`."""
SELF_ATTR = re.compile(r"(?<![\w.])self\.([A-Za-z_]\w*)\b(?![\w.(])")


def config_names(node: ast.ClassDef) -> dict[str, str]:
    """`self.<attr>` -> the config expression `__init__` assigns it once (`self.flag = config.flag`)."""
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    found: dict[str, str] = {}
    twice: set[str] = set()
    pending: list[ast.AST] = [init] if init else []
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, ast.expr):
            continue  # no expression holds a statement: the walk stays on statements
        pending.extend(ast.iter_child_nodes(stmt))
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                if target.attr in found or len(stmt.targets) > 1:
                    twice.add(target.attr)
                found[target.attr] = unparse(stmt.value)
    return {attr: text for attr, text in found.items() if attr not in twice and "config" in text}


def normalized(guard: Guard, names: dict[str, str]) -> Guard:
    """`guard` with each `self.<attr>` that names a config value replaced by it, and every path to
    the model config shortened to `config.`."""
    return tuple((_config_text(text, names), holds) for text, holds in guard)


def _config_text(text: str, names: dict[str, str]) -> str:
    text = SELF_ATTR.sub(lambda m: f"({names[m.group(1)]})" if m.group(1) in names else m.group(0), text)
    text = CONFIG_CHAIN.sub("config.", text)
    return re.sub(r"\((config\.[\w.]+)\)", r"\1", text)


def narrowed(guard: Guard, test: ast.expr) -> tuple[Guard, Guard]:
    """The guards inside `if test:` and inside its `else` (unchanged for a rank or data test)."""
    cond = condition(test)
    if cond is None:
        return guard, guard
    return guard + (cond,), guard + ((cond[0], not cond[1]),)


def guarded_returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[ast.Return, Guard]]:
    """Each `return` of `fn` (outside nested functions) with the configuration guard it runs under;
    a return after `if cond: return ...` runs under `not cond`."""
    found: list[tuple[ast.Return, Guard]] = []
    _returns(fn.body, (), found)
    return found


def _returns(body: list[ast.stmt], guard: Guard, found: list[tuple[ast.Return, Guard]]) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.Return):
            found.append((stmt, guard))
        elif isinstance(stmt, ast.If):
            inside, outside = narrowed(guard, stmt.test)
            _returns(stmt.body, inside, found)
            _returns(stmt.orelse, outside, found)
            if stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise)) and not stmt.orelse:
                guard = outside
        else:
            for child in children(stmt):
                if isinstance(child, ast.stmt):
                    _returns([child], guard, found)
                elif isinstance(child, ast.ExceptHandler):
                    _returns(child.body, guard, found)
