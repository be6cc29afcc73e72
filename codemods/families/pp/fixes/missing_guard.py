"""Skip a parameter this PP rank does not hold, right before the loader looks it up (PP008)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits
from .source_import import import_from

NAME = "is_pp_missing_parameter"
GUARD = "if {check}({key}, self):\n    {exit}\n"


class MissingGuard(EditTransformer[edits.MissingGuard]):
    """The name is imported from the edits' `source`, into the file's own import of that module
    when it has one (relative or not)."""

    edit = edits.MissingGuard
    reach = "statement"

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body = list(updated.body)
        inserted = False
        for index in reversed(range(len(original.body))):
            stmt = original.body[index]
            start = self.get_metadata(PositionProvider, stmt).start
            for edit in self.edits:
                if edit in self.applied or (edit.line, edit.column) != (start.line, start.column):
                    continue
                guard = cst.parse_statement(GUARD.format(check=NAME, key=edit.key, exit=edit.exit))
                held = body[index]
                assert isinstance(held, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
                guard = guard.with_changes(leading_lines=held.leading_lines)
                body[index] = held.with_changes(leading_lines=[])
                body.insert(index, guard)
                self.touch(stmt, edit)
                inserted = True
        return updated.with_changes(body=body) if inserted else updated

    def finish(self, module: cst.Module) -> tuple[cst.Module, list[tuple[int, int]]]:
        """Import the check into the file's own import of its source, once every guard is in."""
        if not self.applied:
            return module, []
        (source, package), *others = {(edit.source, edit.package) for edit in self.applied}
        assert not others, "PP008 gives the guards of one file one source"
        return import_from(module, NAME, source, package)
