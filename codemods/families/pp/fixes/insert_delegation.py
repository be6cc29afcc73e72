"""Insert `self.make_empty_intermediate_tensors = self.<sub>.make_empty_intermediate_tensors`."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import InsertAfter
from .. import edits

MAX_LINE = 88


class InsertDelegation(InsertAfter[edits.InsertDelegation]):
    """`line` ends the `__init__` statement to follow: the last that builds a module, if it
    comes after the submodule's assignment."""

    edit = edits.InsertDelegation
    method = "__init__"

    def statement(self, edit: edits.InsertDelegation, column: int) -> str:
        """The delegation line, wrapped in parentheses the way vLLM writes it when too long."""
        target = f"self.{edit.attr}.make_empty_intermediate_tensors"
        line = f"self.make_empty_intermediate_tensors = {target}\n"
        if column + len(line) - 1 <= MAX_LINE:
            return line
        return f"self.make_empty_intermediate_tensors = (\n    {target}\n)\n"

    def blank_before(self, body: Sequence[cst.BaseStatement], index: int) -> bool:
        """After a block, or after a one-line statement that opens a paragraph of its own (the
        layout of 87% of vLLM 0.33.0's delegations written there)."""
        previous = body[index]
        if not isinstance(previous, cst.SimpleStatementLine):
            return True  # a block
        position = self.get_metadata(PositionProvider, previous)
        opens_paragraph = any(line.comment is None for line in previous.leading_lines)
        return position.start.line == position.end.line and opens_paragraph
