"""Insert `self.make_empty_intermediate_tensors = self.<sub>.make_empty_intermediate_tensors`."""

from __future__ import annotations

import libcst as cst

from .base import EditTransformer


MAX_LINE = 88


def _delegation(attr: str, indent: int) -> str:
    """The delegation line, wrapped in parentheses the way vLLM writes it when it is too long."""
    target = f"self.{attr}.make_empty_intermediate_tensors"
    line = f"self.make_empty_intermediate_tensors = {target}\n"
    if indent + len(line) - 1 <= MAX_LINE:
        return line
    return f"self.make_empty_intermediate_tensors = (\n    {target}\n)\n"


class InsertDelegation(EditTransformer):
    """Edit args: (class name, submodule attribute); `line` is the last line of the statement
    in `__init__` that assigns the submodule; the new line goes right after it."""

    kind = "insert_delegation"

    def __init__(self, edits) -> None:
        super().__init__(edits)
        self.classes: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.classes.pop()
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if original.name.value != "__init__" or not self.classes:
            return updated
        for edit in self.edits:
            cls, attr = edit.args
            if edit in self.applied or self.classes[-1] != cls:
                continue
            body = list(updated.body.body)
            for index, stmt in enumerate(original.body.body):
                position = self.get_metadata(cst.metadata.PositionProvider, stmt)
                if position.end.line != edit.line:
                    continue
                body.insert(index + 1, cst.parse_statement(_delegation(attr, position.start.column)))
                self.touch(stmt, edit)
                return updated.with_changes(body=updated.body.with_changes(body=body))
        return updated
