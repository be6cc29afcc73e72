"""Return the inner model's output unchanged on non-last ranks, right after the inner call."""

from __future__ import annotations

from .. import edits
from .base import InsertAfter

GUARD = "if not get_pp_group().is_last_rank:\n    return {var}\n"


class EarlyReturn(InsertAfter[edits.EarlyReturn]):
    edit = edits.EarlyReturn
    method = "forward"

    def statement(self, edit: edits.EarlyReturn, column: int) -> str:
        if edit.import_from:
            self.need_import(edit, edit.import_from, "get_pp_group")
        return GUARD.format(var=edit.var)
