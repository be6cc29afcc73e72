"""The imports a fix's new code needs: a name the module already binds is reused; otherwise one
new `from module import name` line goes after the module's leading imports. Existing statements
are never merged into or reordered, and no existing name is shadowed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst


def bound_names(module: cst.Module) -> set[str]:
    """Names bound at the module's top level, also under `try:` / `if` (imports, definitions,
    assignments)."""
    names: set[str] = set()
    for stmt in _top_level(module.body):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    names.add(_bound(alias, isinstance(small, cst.Import)))
            elif isinstance(small, cst.Assign):
                names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                names.add(small.target.value)
    return names


def import_sources(module: cst.Module) -> list[str]:
    """The dotted modules of the module's top-level `from X import ...` statements, in order."""
    found = []
    for stmt in _top_level(module.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                    found.append(cst.Module([]).code_for_node(small.module))
    return found


def add_imports(module: cst.Module, needed: Iterable[tuple[str, str]]) -> cst.Module:
    """`from module import name` for each needed name the module does not bind yet, right after
    the last import of its leading block (after a docstring and `from __future__` imports when
    it has no other)."""
    bound = bound_names(module)
    new = [
        cst.parse_statement(f"from {source} import {name}\n")
        for source, name in sorted(set(needed)) if name not in bound
    ]
    if not new:
        return module
    body = list(module.body)
    at = _insertion_point(body)
    if at == 0 and body:
        new[0] = new[0].with_changes(leading_lines=body[0].leading_lines)
        body[0] = body[0].with_changes(leading_lines=[])
    return module.with_changes(body=body[:at] + new + body[at:])


def _insertion_point(body: Sequence[cst.BaseStatement]) -> int:
    at = 0
    for index, stmt in enumerate(body):
        if _is_import(stmt) or (isinstance(stmt, (cst.Try, cst.If)) and _only_imports(stmt)):
            at = index + 1
        elif index == 0 and _is_docstring(stmt):
            at = 1
        else:
            break
    return at


def _top_level(body: Sequence[cst.BaseStatement | cst.Else]) -> Iterable[cst.BaseStatement | cst.Else]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, (cst.Try, cst.If, cst.Else)):
            yield from _top_level(_blocks(stmt))


def _blocks(stmt: cst.BaseStatement | cst.Else) -> list[cst.BaseStatement | cst.Else]:
    """The statements of a `try` / `if` / `else` block and of its other branches."""
    out: list[cst.BaseStatement | cst.Else] = []
    if isinstance(stmt, (cst.Try, cst.If, cst.Else)) and isinstance(stmt.body, cst.IndentedBlock):
        out.extend(stmt.body.body)
    if isinstance(stmt, cst.Try):
        for handler in stmt.handlers:
            if isinstance(handler.body, cst.IndentedBlock):
                out.extend(handler.body.body)
        for extra in (stmt.orelse, stmt.finalbody):
            if extra is not None and isinstance(extra.body, cst.IndentedBlock):
                out.extend(extra.body.body)
    if isinstance(stmt, cst.If) and stmt.orelse is not None:
        out.append(stmt.orelse)
    return out


def _only_imports(stmt: cst.BaseStatement | cst.Else) -> bool:
    """A `try:` / `if` block among the imports: it imports, and does little else."""
    inner = _blocks(stmt)
    return any(_is_import(s) for s in inner) and all(
        _is_import(s) or _is_simple(s) or (isinstance(s, (cst.Try, cst.If, cst.Else)) and _only_imports(s))
        for s in inner
    )


def _is_import(stmt: cst.BaseStatement | cst.Else) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _is_simple(stmt: cst.BaseStatement | cst.Else) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _bound(alias: cst.ImportAlias, plain_import: bool) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = cst.Module([]).code_for_node(alias.name)
    return name.split(".")[0] if plain_import else name
