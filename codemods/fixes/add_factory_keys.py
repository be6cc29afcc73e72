"""Add keys to a `make_empty_intermediate_tensors_factory([...])` key list, in the list's own style."""

from __future__ import annotations

import libcst as cst

from .base import EditTransformer


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
        return updated.with_changes(elements=_extended(updated, edit.args[1]))

    def _matches(self, node, edit) -> bool:
        if edit in self.applied or self.start_line(node) != edit.line:
            return False
        values = tuple(
            e.value.evaluated_value if isinstance(e.value, cst.SimpleString) else None
            for e in node.elements
        )
        return values == tuple(edit.args[0])


def _extended(node, keys: tuple[str, ...]) -> list[cst.Element]:
    elements = list(node.elements)
    last = elements[-1]
    quote = last.value.quote if isinstance(last.value, cst.SimpleString) else '"'
    if len(elements) > 1 and isinstance(elements[-2].comma, cst.Comma):
        separator = elements[-2].comma
    else:
        opener = node.lbracket.whitespace_after if isinstance(node, cst.List) else (
            node.lpar[0].whitespace_after if node.lpar else cst.SimpleWhitespace("")
        )
        multiline = isinstance(opener, cst.ParenthesizedWhitespace)
        separator = cst.Comma(whitespace_after=opener if multiline else cst.SimpleWhitespace(" "))
    trailing = last.comma
    out = elements[:-1] + [last.with_changes(comma=separator)]
    for i, key in enumerate(keys):
        comma = trailing if i == len(keys) - 1 else separator
        out.append(cst.Element(value=cst.SimpleString(f"{quote}{key}{quote}"), comma=comma))
    return out
