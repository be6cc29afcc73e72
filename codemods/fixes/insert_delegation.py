"""Insert `self.make_empty_intermediate_tensors = self.<sub>.make_empty_intermediate_tensors`."""

from __future__ import annotations

from ..findings import Edit
from .base import InsertAfter

MAX_LINE = 88


class InsertDelegation(InsertAfter):
    """Edit args: (class name, submodule attribute); `line` is the last line of the statement
    in `__init__` that assigns the submodule."""

    kind = "insert_delegation"
    method = "__init__"

    def statement(self, edit: Edit, column: int) -> str:
        """The delegation line, wrapped in parentheses the way vLLM writes it when too long."""
        target = f"self.{edit.args[1]}.make_empty_intermediate_tensors"
        line = f"self.make_empty_intermediate_tensors = {target}\n"
        if column + len(line) - 1 <= MAX_LINE:
            return line
        return f"self.make_empty_intermediate_tensors = (\n    {target}\n)\n"
