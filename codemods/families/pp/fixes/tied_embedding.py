"""The two edits of upstream's tied-embedding shape (PP009): build the embedding on the last rank
too when the model ties it, and tie only inside the last-rank branch."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits

WIDER = "if {group}.is_first_rank or (\n    {flag} and {group}.is_last_rank\n):\n    pass\n"


class TiedEmbedding(EditTransformer[edits.TiedEmbedding]):
    edit = edits.TiedEmbedding
    reach = "statement"

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.If:
        start = self.get_metadata(PositionProvider, original).start
        edit = next((e for e in self.edits if e not in self.applied and (e.line, e.column) == (start.line, start.column)),
                    None)
        test = original.test
        if edit is None or not isinstance(test, cst.Attribute) or test.attr.value != "is_first_rank":
            return updated
        group = cst.Module([]).code_for_node(test.value)
        wider = cst.parse_statement(WIDER.format(group=group, flag=edit.flag))
        assert isinstance(wider, cst.If)
        position = self.get_metadata(PositionProvider, test)
        self.spans.setdefault(edit, []).append((start.line, position.end.line))
        self.applied.add(edit)
        return updated.with_changes(test=wider.test, whitespace_before_test=wider.whitespace_before_test,
                                    whitespace_after_test=wider.whitespace_after_test)


class TieOnLastRank(EditTransformer[edits.TieOnLastRank]):
    edit = edits.TieOnLastRank

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        starts = [self.get_metadata(PositionProvider, stmt).start for stmt in original.body]
        where = {(p.line, p.column): index for index, p in enumerate(starts)}
        body = list(updated.body)
        dropped: set[int] = set()
        for edit in self.edits:
            source, target = where.get((edit.line, edit.column)), where.get((edit.target_line, edit.target_column))
            if edit in self.applied or source is None or target is None or target >= source:
                continue
            branch = body[target]
            if not isinstance(branch, cst.If) or not isinstance(branch.body, cst.IndentedBlock):
                continue
            tie = body[source]
            assert isinstance(tie, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
            leading = list(tie.leading_lines)
            blank = []
            while leading and leading[0].comment is None:
                blank.append(leading.pop(0))
            inner = [*branch.body.body, tie.with_changes(leading_lines=leading)]
            body[target] = branch.with_changes(body=branch.body.with_changes(body=inner))
            dropped.add(source)
            if source + 1 < len(body) and blank:
                follower = body[source + 1]
                if isinstance(follower, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) \
                        and not follower.leading_lines:
                    body[source + 1] = follower.with_changes(leading_lines=blank)
            self.touch(original.body[source], edit)
            self.touch(original.body[target], edit)
        if not dropped:
            return updated
        return updated.with_changes(body=[s for index, s in enumerate(body) if index not in dropped])
