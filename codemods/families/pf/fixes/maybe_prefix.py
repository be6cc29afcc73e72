"""`f"{prefix}.rest"` -> `maybe_prefix(prefix, "rest")`: no leading dot when `prefix` is empty."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import EditTransformer
from .. import edits


class MaybePrefix(EditTransformer[edits.MaybePrefix]):
    edit = edits.MaybePrefix
    reach = "statement"

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString) -> cst.BaseExpression:
        position = self.get_metadata(cst.metadata.PositionProvider, original).start
        edit = next(
            (e for e in self.edits if e not in self.applied and (e.line, e.column) == (position.line, position.column)),
            None,
        )
        if edit is None:
            return updated
        self.touch(original, edit)
        self.need_import(edit, edit.source, "maybe_prefix")
        dot = updated.parts[1]
        assert isinstance(dot, cst.FormattedStringText)
        rest = [dot.with_changes(value=dot.value[1:]), *updated.parts[2:]] if dot.value != "." else [*updated.parts[2:]]
        quote = updated.end
        texts = [p.value for p in rest if isinstance(p, cst.FormattedStringText)]
        if len(texts) == len(rest):
            name: cst.BaseExpression = cst.SimpleString(quote + "".join(texts) + quote)
        else:
            name = updated.with_changes(parts=rest)
        return cst.Call(cst.Name("maybe_prefix"), [
            cst.Arg(cst.Name("prefix"), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), cst.Arg(name),
        ])
