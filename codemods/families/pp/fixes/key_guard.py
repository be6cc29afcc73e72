"""Guard the read of a received key by the key itself, not by a value only the first rank has (PP015)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits


class KeyGuard(EditTransformer[edits.KeyGuard]):
    edit = edits.KeyGuard
    reach = "statement"

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.If:
        start = self.get_metadata(PositionProvider, original).start
        edit = next(
            (e for e in self.edits if e not in self.applied and (e.line, e.column) == (start.line, start.column)),
            None,
        )
        if edit is None:
            return updated
        test = cst.parse_expression(f'"{edit.key}" in {edit.tensors}.tensors')
        self.touch(original.test, edit)
        return updated.with_changes(test=test)
