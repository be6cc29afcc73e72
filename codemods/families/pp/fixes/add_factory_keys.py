"""Add keys to a `make_empty_intermediate_tensors_factory([...])` key list, in the list's own style."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import LiteralTransformer
from ....fixes.layout import append
from .. import edits


class AddFactoryKeys(LiteralTransformer[edits.AddFactoryKeys]):
    edit = edits.AddFactoryKeys
    reach = "statement"

    def leave_List(self, original: cst.List, updated: cst.List) -> cst.BaseExpression:
        return self._extend(original, updated)

    def leave_Tuple(self, original: cst.Tuple, updated: cst.Tuple) -> cst.BaseExpression:
        return self._extend(original, updated)

    def _extend(self, original, updated):
        edit = self.literal_edit(original)
        if edit is None:
            return updated
        self.touch(original, edit)
        last = updated.elements[-1].value
        quote = last.quote if isinstance(last, cst.SimpleString) else '"'
        return append(updated, [cst.Element(cst.SimpleString(f"{quote}{k}{quote}")) for k in edit.keys])
