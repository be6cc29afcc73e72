"""Skip a parameter this PP rank does not hold, right before the loader looks it up (PP008)."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits

NAME = "is_pp_missing_parameter"
GUARD = "if {check}({key}, self):\n    {exit}\n"


class MissingGuard(EditTransformer[edits.MissingGuard]):
    """The name is imported from the edits' `source`, into the file's own import of that module
    when it has one (relative or not)."""

    edit = edits.MissingGuard

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body = list(updated.body)
        inserted = False
        for index in reversed(range(len(original.body))):
            stmt = original.body[index]
            start = self.get_metadata(PositionProvider, stmt).start
            for edit in self.edits:
                if edit in self.applied or (edit.line, edit.column) != (start.line, start.column):
                    continue
                guard = cst.parse_statement(GUARD.format(check=NAME, key=edit.key, exit=edit.exit))
                held = body[index]
                assert isinstance(held, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
                guard = guard.with_changes(leading_lines=held.leading_lines)
                body[index] = held.with_changes(leading_lines=[])
                body.insert(index, guard)
                self.touch(stmt, edit)
                inserted = True
        return updated.with_changes(body=body) if inserted else updated

    def finish(self, module: cst.Module) -> tuple[cst.Module, list[tuple[int, int]]]:
        """Import the check into the file's own import of its source, once every guard is in."""
        if _imports(module, NAME) or not self.applied:
            return module, []
        (source, package), *others = {(edit.source, edit.package) for edit in self.applied}
        assert not others, "PP008 gives the guards of one file one source"
        wrapper = cst.MetadataWrapper(module)
        positions = wrapper.resolve(PositionProvider)
        body = list(wrapper.module.body)
        for index, stmt in enumerate(body):
            node = _source_import(stmt, source, package)
            if node is not None:
                body[index] = stmt.with_changes(body=[_with_alias(node, NAME)])
                span = positions[stmt]
                return wrapper.module.with_changes(body=body), [(span.start.line, span.end.line)]
        context = CodemodContext()
        AddImportsVisitor.add_needed_import(context, source, NAME)
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
