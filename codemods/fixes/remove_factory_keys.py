"""Remove keys from a `make_empty_intermediate_tensors_factory([...])` key list."""

from __future__ import annotations

import libcst as cst

from .add_factory_keys import string_values
from .base import EditTransformer


class RemoveFactoryKeys(EditTransformer):
    """Edit args: (existing keys, keys to remove)."""

    kind = "remove_keys"

    def leave_List(self, original: cst.List, updated: cst.List) -> cst.BaseExpression:
        return self._remove(original, updated)

    def leave_Tuple(self, original: cst.Tuple, updated: cst.Tuple) -> cst.BaseExpression:
        return self._remove(original, updated)

    def _remove(self, original, updated):
        edit = next(
            (e for e in self.edits if e not in self.applied and self.start_line(original) == e.line
             and string_values(original) == tuple(e.args[0])),
            None,
        )
        if edit is None:
            return updated
        self.touch(original, edit)
        elements = list(updated.elements)
        kept = [e for e, value in zip(elements, edit.args[0]) if value not in edit.args[1]]
        if kept and kept[-1] is not elements[-1]:
            kept[-1] = kept[-1].with_changes(comma=elements[-1].comma)
        if isinstance(updated, cst.Tuple) and len(kept) == 1 and not isinstance(kept[0].comma, cst.Comma):
            kept[0] = kept[0].with_changes(comma=cst.Comma())
        return updated.with_changes(elements=kept)
