"""What a decoder says and does about EAGLE-3 aux hidden states over PP (PP011): plain facts from
one class's AST.

A decoder opts in with `supports_aux_hidden_states_over_pp = True` (vLLM 0.31.0+); its forward
must then pack its aux states into what non-last ranks send and collect them on the last.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ....unparse import unparse
from ....walk import walk

FLAG = "supports_aux_hidden_states_over_pp"
PACK = "pack_local_aux_hidden_states"
COLLECT = "collect_remote_aux_hidden_states"
AUX_LAYERS = "aux_hidden_state_layers"
MAYBE_ADD = "_maybe_add_hidden_state"


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
    relative_indices: tuple[tuple[int, int, str], ...] = ()
    """(line, column, index name) of each `enumerate(islice(self.layers, start, end))` (or of
    `self.layers[start:end]`) without `start=` in forward whose index is compared with absolute
    layer ids (`in self.aux_hidden_state_layers`, `_maybe_add_hidden_state(aux, idx + 1, ...)`)."""


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can hold aux facts (a text test before any walk)."""
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
        relative_indices=tuple(_relative_indices(forward)) if forward and "enumerate" in text else (),
    )


def _relative_indices(fn: ast.AST) -> list[tuple[int, int, str]]:
    found = []
    for loop in walk(fn):
        if not (isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.target, ast.Tuple) and loop.target.elts):
            continue
        index, call = loop.target.elts[0], loop.iter
        if not (isinstance(index, ast.Name) and isinstance(call, ast.Call) and _name(call.func) == "enumerate"):
            continue
        if len(call.args) != 1 or call.keywords or not _stage_slice(call.args[0]):
            continue
        if any(_compares_absolute(node, index.id) for stmt in _until_rebound(loop.body, index.id)
               for node in walk(stmt)):
            found.append((call.lineno, call.col_offset, index.id))
    return found


def _stage_slice(node: ast.expr) -> bool:
    """`islice(self.x, start, end)` or `self.x[start:end]`: this rank's layers, from `start`."""
    if isinstance(node, ast.Call) and _name(node.func) == "islice":
        return len(node.args) >= 3 and _on_self(node.args[0])
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.lower is not None
            and _on_self(node.value))


def _until_rebound(body: list[ast.stmt], name: str) -> list[ast.stmt]:
    """The loop's statements up to the first that rebinds the index (`idx = idx + self.start_layer`)."""
    kept = []
    for stmt in body:
        targets = [t for n in walk(stmt) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                   for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
        if any(isinstance(t, ast.Name) and t.id == name for target in targets for t in walk(target)):
            break
        kept.append(stmt)
    return kept


def _compares_absolute(node: ast.AST, index: str) -> bool:
    if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
        return _is_index(node.left, index) and any(AUX_LAYERS in unparse(c) for c in node.comparators)
    if isinstance(node, ast.Call) and _name(node.func) == MAYBE_ADD:
        return any(_is_index(arg, index) for arg in node.args)
    return False


def _is_index(node: ast.expr, index: str) -> bool:
    """`idx`, or `idx` plus or minus a constant."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = node.left, node.right
        return (_is_index(left, index) and isinstance(right, ast.Constant)) or (
            isinstance(node.op, ast.Add) and isinstance(left, ast.Constant) and _is_index(right, index))
    return isinstance(node, ast.Name) and node.id == index


def _on_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _start(stmt: ast.stmt) -> int:
    """A statement's first line, decorators included."""
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _called(fn: ast.AST) -> set[str]:
    names = set()
    for node in walk(fn):
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
