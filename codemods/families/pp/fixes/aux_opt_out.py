"""Opt a decoder out of aux hidden states over PP: `supports_aux_hidden_states_over_pp = False` as
its first statement after the docstring, followed by a blank line (PP011; upstream's MiMoModel)."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import EditTransformer
from .. import edits

FLAG = "supports_aux_hidden_states_over_pp = False\n"


class AuxOptOut(EditTransformer[edits.AuxOptOut]):
    edit = edits.AuxOptOut

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        edit = next((e for e in self.edits if e not in self.applied and e.cls == original.name.value), None)
        if edit is None or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        body = list(updated.body.body)
        index = 1 if len(body) > 1 and _docstring(body[0]) else 0
        if self.start_line(original.body.body[index]) != edit.line:
            return updated
        held = body[index]
        assert isinstance(held, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        flag = cst.parse_statement(FLAG).with_changes(leading_lines=held.leading_lines)
        body[index] = held.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        body.insert(index, flag)
        self.touch(original.body.body[index], edit)
        self.spans[edit].append((edit.line - len(held.leading_lines), edit.line))  # the blank lines it moves
        return updated.with_changes(body=updated.body.with_changes(body=body))


def _docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString)
    )
