"""Import a name into a file's own `from <source> import ...` (spelled absolutely or relative to
the file's package) when it has one, else as a new import: the name a fix's new code needs comes
from where the model's splitter comes from."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider


def import_from(module: cst.Module, name: str, source: str, package: str) -> tuple[cst.Module, list[tuple[int, int]]]:
    """`module` with `name` bound from `source`, and the original line span of the import it
    extended (none for a new import or a name already bound)."""
    if _imports(module, name):
        return module, []
    wrapper = cst.MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)
    body = list(wrapper.module.body)
    for index, stmt in enumerate(body):
        node = _source_import(stmt, source, package)
        if node is not None:
            body[index] = stmt.with_changes(body=[_with_alias(node, name)])
            span = positions[stmt]
            return wrapper.module.with_changes(body=body), [(span.start.line, span.end.line)]
    from libcst.codemod import CodemodContext  # libcst.matchers, which it loads, takes 0.3-0.8 s
    from libcst.codemod.visitors import AddImportsVisitor

    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, source, name)
    return AddImportsVisitor(context).transform_module(module), []


def _imports(module: cst.Module, name: str) -> bool:
    return any(
        isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar)
        and any((alias.evaluated_alias or alias.evaluated_name) == name for alias in node.names)
        for stmt in module.body if isinstance(stmt, cst.SimpleStatementLine) for node in stmt.body
    )


def _source_import(stmt: cst.CSTNode, source: str, package: str) -> cst.ImportFrom | None:
    """`from <source> import ...`, spelled absolutely or relative to `package`."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    node = stmt.body[0]
    if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
        return None
    dotted = cst.helpers.get_full_name_for_node(node.module) if node.module else ""
    if node.relative:
        parts = package.split(".") if package else []
        up = len(node.relative) - 1
        if up > len(parts):
            return None
        dotted = ".".join([*parts[: len(parts) - up], *([dotted] if dotted else [])])
    return node if dotted == source else None


def _with_alias(node: cst.ImportFrom, name: str) -> cst.ImportFrom:
    """`node` with `name` added: in sorted place when the names are sorted, else last; the
    commas (and their line breaks) of a parenthesized list are kept."""
    assert not isinstance(node.names, cst.ImportStar)
    names = list(node.names)
    values = [a.evaluated_name for a in names]
    at = len(names)
    if values == sorted(values):
        at = next((i for i, v in enumerate(values) if v > name), len(names))
    between = names[0].comma if len(names) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    alias = cst.ImportAlias(name=cst.Name(name), comma=between)
    if at == len(names):
        alias = alias.with_changes(comma=names[-1].comma)
        names[-1] = names[-1].with_changes(comma=between)
    names.insert(at, alias)
    return node.with_changes(names=names)
