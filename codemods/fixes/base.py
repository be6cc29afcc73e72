"""What every fix transformer shares: the edits it applies and the spans it touched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Generic, TypeVar

import libcst as cst
from libcst.metadata import PositionProvider

from ..edits import Edit, InsertStatement, LiteralEdit

E = TypeVar("E", bound=Edit)
L = TypeVar("L", bound=LiteralEdit)
S = TypeVar("S", bound=InsertStatement)


class EditTransformer(cst.CSTTransformer, Generic[E]):
    """Applies the edits of one type (`edit`) to one module; records, per edit, the original
    line spans it changed and the `from module import name` imports its new code needs."""

    METADATA_DEPENDENCIES = (PositionProvider,)
    edit: ClassVar[type[Edit]] = Edit
    reach: ClassVar[str] = "method"
    """What of a method holding the edit the kind reads (libcst reads no more, `pieces`): the
    whole "method"; the "statement" that holds the edit's lines, for a kind that finds what it
    rewrites there by position alone; or the `def` lines ("header": its name and parameters)."""

    def __init__(self, edits: Sequence[E]) -> None:
        super().__init__()
        self.edits = list(edits)
        self.applied: set[E] = set()
        self.spans: dict[E, list[tuple[int, int]]] = {}
        self.imports: dict[E, set[tuple[str, str]]] = {}

    def prepare(self, module: cst.Module) -> None:
        """Read what the kind needs of the module's top level before the visit (`module` is the
        whole file, or its outline when libcst reads only the pieces the edits touch)."""

    def finish(self, module: cst.Module) -> tuple[cst.Module, list[tuple[int, int]]]:
        """A last step once every edit of the file is in (imports the kind adds itself), with
        the original line spans it changed."""
        return module, []

    def start_line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def touch(self, node: cst.CSTNode, edit: E) -> None:
        position = self.get_metadata(PositionProvider, node)
        self.spans.setdefault(edit, []).append((position.start.line, position.end.line))
        self.applied.add(edit)

    def need_import(self, edit: E, module: str, name: str) -> None:
        self.imports.setdefault(edit, set()).add((module, name))


class LiteralTransformer(EditTransformer[L]):
    def literal_edit(self, node: cst.List | cst.Tuple | cst.Dict) -> L | None:
        """The pending edit for a literal that starts on the edit's line and whose string
        elements (dict keys) are the edit's `existing`."""
        return next(
            (e for e in self.edits if e not in self.applied and self.start_line(node) == e.line
             and string_values(node) == tuple(e.existing)),
            None,
        )


def string_values(node) -> tuple:
    """The string values of a literal's elements (of a dict's keys); None for any other element."""
    items = [getattr(e, "key", None) if isinstance(node, cst.Dict) else e.value for e in node.elements]
    return tuple(v.evaluated_value if isinstance(v, cst.SimpleString) else None for v in items)


class InsertAfter(EditTransformer[S]):
    """Inserts a statement into method `method` of the edit's class, right after the top-level
    statement of that method that ends on the edit's line."""

    method = ""

    def __init__(self, edits: Sequence[S]) -> None:
        super().__init__(edits)
        self.classes: list[str] = []

    def statement(self, edit: S, column: int) -> str:
        """The source of the statement to insert (at indentation `column`)."""
        raise NotImplementedError

    def blank_before(self, body: Sequence[cst.BaseStatement], index: int) -> bool:
        """Whether a blank line separates the inserted statement from `body[index]`."""
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.classes.pop()
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if original.name.value != self.method or not self.classes:
            return updated
        if not isinstance(original.body, cst.IndentedBlock):
            return self._unfold(original, updated)
        body = list(updated.body.body)
        inserts = []
        for index, stmt in enumerate(original.body.body):
            end = self.get_metadata(PositionProvider, stmt).end.line
            for edit in self.edits:
                if edit not in self.applied and self.classes[-1] == edit.cls and end == edit.line:
                    inserted = cst.parse_statement(self.statement(edit, self.get_metadata(PositionProvider, stmt).start.column))
                    if self.blank_before(original.body.body, index):
                        inserted = inserted.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
                    inserts.append((index, inserted))
                    self.touch(stmt, edit)
        if not inserts:
            return updated
        for index, inserted in reversed(inserts):
            body.insert(index + 1, inserted)
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def _unfold(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        """A method written on its `def` line (`def __init__(self): a(); b()`) gets an indented
        body, one statement per line, with the new statement last."""
        suite = original.body
        line = self.get_metadata(PositionProvider, suite).end.line
        pending = [e for e in self.edits if e not in self.applied and self.classes[-1] == e.cls and e.line == line]
        if not pending or not isinstance(updated.body, cst.SimpleStatementSuite):
            return updated
        column = self.get_metadata(PositionProvider, original).start.column + 4
        body: list[cst.BaseStatement] = [
            cst.SimpleStatementLine(body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
            for small in updated.body.body
        ]
        for edit in pending:
            body.append(cst.parse_statement(self.statement(edit, column)))
            self.touch(suite, edit)
        return updated.with_changes(body=cst.IndentedBlock(body=body, header=updated.body.trailing_whitespace))
