"""Return the inner model's output unchanged on non-last ranks, right after the inner call."""

from __future__ import annotations

from ..findings import Edit
from .base import InsertAfter

GUARD = "if not get_pp_group().is_last_rank:\n    return {var}\n"


class EarlyReturn(InsertAfter):
    """Edit args: (class name, variable); `line` is the last line of the inner-call statement."""

    kind = "early_return"
    method = "forward"

    def statement(self, edit: Edit, column: int) -> str:
        self.imports.add(("vllm.distributed", "get_pp_group"))
        return GUARD.format(var=edit.args[1])
