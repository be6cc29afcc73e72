"""Skip the layers this PP rank does not hold, first thing in a loop over every layer (PP014)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits
from .source_import import import_from

NAME = "PPMissingLayer"
SKIP = "if isinstance({var}, {name}):\n    continue\n"


class SkipPlaceholder(EditTransformer[edits.SkipPlaceholder]):
    """The skip goes before the body's first statement, which keeps its comments and blank lines
    above the skip; `PPMissingLayer` is imported into the file's own import of the edits' source
    when it has one (relative or not)."""

    edit = edits.SkipPlaceholder

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if not original.body:
            return updated
        start = self.get_metadata(PositionProvider, original.body[0]).start
        edit = next(
            (e for e in self.edits if e not in self.applied and (e.line, e.column) == (start.line, start.column)),
            None,
        )
        if edit is None:
            return updated
        first = updated.body[0]
        assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        skip = cst.parse_statement(SKIP.format(var=edit.var, name=NAME)).with_changes(leading_lines=first.leading_lines)
        self.touch(original.body[0], edit)
        return updated.with_changes(body=[skip, first.with_changes(leading_lines=[]), *updated.body[1:]])

    def finish(self, module: cst.Module) -> tuple[cst.Module, list[tuple[int, int]]]:
        needed = {(edit.source, edit.package) for edit in self.applied if edit.source}
        if not needed:
            return module, []
        (source, package), *others = needed
        assert not others, "PP014 gives the skips of one file one source"
        return import_from(module, NAME, source, package)
