"""Return the inner model's output unchanged on non-last ranks, right after the inner call."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from .base import EditTransformer

GUARD = "if not get_pp_group().is_last_rank:\n    return {var}\n"


class EarlyReturn(EditTransformer):
    """Edit args: (class name, variable); `line` is the last line of the inner-call statement."""

    kind = "early_return"

    def __init__(self, edits) -> None:
        super().__init__(edits)
        self.classes: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.classes.pop()
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if original.name.value != "forward" or not self.classes:
            return updated
        for edit in self.edits:
            cls, var = edit.args
            if edit in self.applied or self.classes[-1] != cls:
                continue
            for index, stmt in enumerate(original.body.body):
                if self.get_metadata(PositionProvider, stmt).end.line != edit.line:
                    continue
                body = list(updated.body.body)
                body.insert(index + 1, cst.parse_statement(GUARD.format(var=var)))
                self.touch(stmt, edit)
                self.imports.add(("vllm.distributed", "get_pp_group"))
                return updated.with_changes(body=updated.body.with_changes(body=body))
        return updated
