"""Add keys to a `make_empty_intermediate_tensors_factory([...])` key list, in the list's own style."""

from __future__ import annotations

import libcst as cst

from .base import EditTransformer
from .layout import append


class AddFactoryKeys(EditTransformer):
    """Edit args: (existing keys, keys to add)."""

    kind = "add_keys"

    def leave_List(self, original: cst.List, updated: cst.List) -> cst.BaseExpression:
        return self._extend(original, updated)

    def leave_Tuple(self, original: cst.Tuple, updated: cst.Tuple) -> cst.BaseExpression:
        return self._extend(original, updated)

    def _extend(self, original, updated):
        edit = next((e for e in self.edits if self._matches(original, e)), None)
        if edit is None:
            return updated
        self.touch(original, edit)
        last = updated.elements[-1].value
        quote = last.quote if isinstance(last, cst.SimpleString) else '"'
        return append(updated, [cst.Element(cst.SimpleString(f"{quote}{k}{quote}")) for k in edit.args[1]])

    def _matches(self, node, edit) -> bool:
        if edit in self.applied or self.start_line(node) != edit.line:
            return False
        return string_values(node) == tuple(edit.args[0])


def string_values(node) -> tuple:
    """The string values of a literal's elements (of a dict's keys); None for any other element."""
    items = [getattr(e, "key", None) if isinstance(node, cst.Dict) else e.value for e in node.elements]
    return tuple(v.evaluated_value if isinstance(v, cst.SimpleString) else None for v in items)
