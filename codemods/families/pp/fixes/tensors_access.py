"""Route `.get(...)`, `.keys()` and `in` on an IntermediateTensors through its `.tensors` dict."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits


def _tensors(name: cst.Name) -> cst.Attribute:
    return cst.Attribute(value=name, attr=cst.Name("tensors"))


class TensorsAccess(EditTransformer[edits.TensorsAccess]):
    edit = edits.TensorsAccess
    reach = "statement"

    def _edit(self, node: cst.CSTNode, kind: str):
        position = self.get_metadata(PositionProvider, node).start
        return next(
            (e for e in self.edits if e not in self.applied and e.access == kind
             and e.line == position.line and e.column == position.column),
            None,
        )

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("get", "keys") and isinstance(func.value, cst.Name)):
            return updated
        edit = self._edit(original, func.attr.value)
        if edit is None:
            return updated
        self.touch(original, edit)
        return updated.with_changes(func=func.with_changes(value=_tensors(func.value)))

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison) -> cst.BaseExpression:
        edit = self._edit(original, "in")
        if edit is None:
            return updated
        targets = [
            t.with_changes(comparator=_tensors(t.comparator))
            if isinstance(t.operator, (cst.In, cst.NotIn)) and isinstance(t.comparator, cst.Name) else t
            for t in updated.comparisons
        ]
        self.touch(original, edit)
        return updated.with_changes(comparisons=targets)
