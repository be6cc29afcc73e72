"""What a decoder says and does about EAGLE-3 aux hidden states over PP (PP011): plain facts from
one class's AST.

A decoder opts in with `supports_aux_hidden_states_over_pp = True` (vLLM 0.31.0+); its forward
must then pack its aux states into what non-last ranks send and collect them on the last.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

FLAG = "supports_aux_hidden_states_over_pp"
PACK = "pack_local_aux_hidden_states"
COLLECT = "collect_remote_aux_hidden_states"


@dataclass(frozen=True)
class AuxFacts:
    """`flag`: the class's own value for the attribute (None when it sets none). `forward_line`:
    where its own forward starts (0 when it defines none); `packs` / `collects`: whether that
    forward calls the helpers; `delegates`: whether it hands on to `super().forward(...)`.
    `body_line` / `body_column`: the class's first statement after its docstring, where a flag goes."""

    flag: bool | None
    flag_line: int
    forward_line: int
    forward_column: int
    packs: bool
    collects: bool
    delegates: bool
    body_line: int
    body_column: int


def wanted(source_lines: list[str]) -> bool:
    text = "\n".join(source_lines)
    return FLAG in text or PACK in text or "def forward" in text


def aux_facts(node: ast.ClassDef, lines: list[str]) -> AuxFacts | None:
    flag, flag_line = None, 0
    forward = None
    for item in node.body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            if any(isinstance(t, ast.Name) and t.id == FLAG for t in targets):
                value = item.value
                flag = bool(value.value) if isinstance(value, ast.Constant) else None
                flag_line = item.lineno
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "forward":
            forward = item
    if flag is None and forward is None:
        return None
    text = "\n".join(lines[forward.lineno - 1 : forward.end_lineno]) if forward else ""
    # Only a forward whose text names a helper or `super(` can call one: the others are not walked.
    called = _called(forward) if forward and any(w in text for w in (PACK, COLLECT, "super(")) else set()
    first = node.body[1] if len(node.body) > 1 and _docstring(node.body[0]) else node.body[0]
    return AuxFacts(
        flag=flag,
        flag_line=flag_line,
        forward_line=forward.lineno if forward else 0,
        forward_column=forward.col_offset if forward else 0,
        packs=PACK in called,
        collects=COLLECT in called,
        delegates="super.forward" in called,
        body_line=_start(first),
        body_column=first.col_offset,
    )


def _start(stmt: ast.stmt) -> int:
    """A statement's first line, decorators included."""
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _called(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            names.add(func.attr)
            owner = func.value
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                names.add(f"super.{func.attr}")
        elif isinstance(func, ast.Name):
            names.add(func.id)
    return names
