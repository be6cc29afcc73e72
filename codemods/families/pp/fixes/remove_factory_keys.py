"""Remove keys from a `make_empty_intermediate_tensors_factory([...])` key list."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import LiteralTransformer
from ....fixes.layout import _closer, _set_closer
from .. import edits


class RemoveFactoryKeys(LiteralTransformer[edits.RemoveFactoryKeys]):
    edit = edits.RemoveFactoryKeys
    reach = "statement"

    def leave_List(self, original: cst.List, updated: cst.List) -> cst.BaseExpression:
        return self._remove(original, updated)

    def leave_Tuple(self, original: cst.Tuple, updated: cst.Tuple) -> cst.BaseExpression:
        return self._remove(original, updated)

    def _remove(self, original, updated):
        edit = self.literal_edit(original)
        if edit is None:
            return updated
        self.touch(original, edit)
        elements = list(updated.elements)
        kept = [e for e, value in zip(elements, edit.existing, strict=False) if value not in edit.keys]
        if kept and kept[-1] is not elements[-1]:
            kept[-1], updated = _new_last(kept[-1], elements[-1].comma, updated)
        if isinstance(updated, cst.Tuple) and len(kept) == 1 and not isinstance(kept[0].comma, cst.Comma):
            kept[0] = kept[0].with_changes(comma=cst.Comma())
        return updated.with_changes(elements=kept)


def _new_last(element, closing, node):
    """`element` becomes the last one: it takes the removed last element's closing comma (or its
    absence) and keeps its own trailing comment, on its line or, without a comma, before the closer."""
    own = element.comma.whitespace_after if isinstance(element.comma, cst.Comma) else None
    comment = own.first_line if isinstance(own, cst.ParenthesizedWhitespace) else None
    if comment is None or comment.comment is None:
        return element.with_changes(comma=closing), node
    if isinstance(closing, cst.Comma) and isinstance(closing.whitespace_after, cst.ParenthesizedWhitespace):
        after = closing.whitespace_after.with_changes(first_line=comment)
        return element.with_changes(comma=closing.with_changes(whitespace_after=after)), node
    closer = _closer(node)
    if isinstance(closer, cst.ParenthesizedWhitespace):
        node = _set_closer(node, closer.with_changes(first_line=comment))
    return element.with_changes(comma=closing), node
