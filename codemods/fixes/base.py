"""What every fix transformer shares: the edits it applies and the spans it touched."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.metadata import PositionProvider

from ..findings import Edit


class EditTransformer(cst.CSTTransformer):
    """Applies the edits of one kind to one module; records the original line spans it changed
    and the `from module import name` imports its new code needs."""

    METADATA_DEPENDENCIES = (PositionProvider,)
    kind = ""

    def __init__(self, edits: list[Edit]) -> None:
        super().__init__()
        self.edits = edits
        self.applied: set[Edit] = set()
        self.spans: list[tuple[int, int]] = []
        self.imports: set[tuple[str, str]] = set()

    @classmethod
    def finish(cls, module: cst.Module) -> tuple[cst.Module, list[tuple[int, int]]]:
        """A last step once every edit of the file is in (imports the kind adds itself), with
        the original line spans it changed."""
        return module, []

    def start_line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def touch(self, node: cst.CSTNode, edit: Edit) -> None:
        position = self.get_metadata(PositionProvider, node)
        self.spans.append((position.start.line, position.end.line))
        self.applied.add(edit)

    def literal_edit(self, node: cst.List | cst.Tuple | cst.Dict) -> Edit | None:
        """The pending edit for a literal that starts on the edit's line and whose string
        elements (dict keys) are the edit's first argument."""
        return next(
            (e for e in self.edits if e not in self.applied and self.start_line(node) == e.line
             and string_values(node) == tuple(e.args[0])),
            None,
        )


def string_values(node) -> tuple:
    """The string values of a literal's elements (of a dict's keys); None for any other element."""
    items = [getattr(e, "key", None) if isinstance(node, cst.Dict) else e.value for e in node.elements]
    return tuple(v.evaluated_value if isinstance(v, cst.SimpleString) else None for v in items)


class InsertAfter(EditTransformer):
    """Inserts a statement into method `method` of the class named by the edit's first argument,
    right after the top-level statement of that method that ends on the edit's line."""

    method = ""

    def __init__(self, edits: list[Edit]) -> None:
        super().__init__(edits)
        self.classes: list[str] = []

    def statement(self, edit: Edit, column: int) -> str:
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
        for edit in self.edits:
            if edit in self.applied or self.classes[-1] != edit.args[0]:
                continue
            for index, stmt in enumerate(original.body.body):
                position = self.get_metadata(PositionProvider, stmt)
                if position.end.line != edit.line:
                    continue
                body = list(updated.body.body)
                inserted = cst.parse_statement(self.statement(edit, position.start.column))
                if self.blank_before(original.body.body, index):
                    inserted = inserted.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
                body.insert(index + 1, inserted)
                self.touch(stmt, edit)
                return updated.with_changes(body=updated.body.with_changes(body=body))
        return updated
