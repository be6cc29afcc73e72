"""Give `intermediate_tensors` (and later positional parameters) a `= None` default."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import EditTransformer
from .. import edits


class DefaultNone(EditTransformer[edits.DefaultNone]):
    edit = edits.DefaultNone
    reach = "header"

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        for edit in self.edits:
            if edit in self.applied or original.name.value != edit.function:
                continue
            target = _param(original.params, "intermediate_tensors")
            if target is None or self.start_line(target) != edit.line:
                continue
            self.touch(original.params, edit)
            return updated.with_changes(params=self._rewrite(updated.params, edit))
        return updated

    def _rewrite(self, params: cst.Parameters, edit: edits.DefaultNone) -> cst.Parameters:
        equal = _equal_style(params)

        def fix(p: cst.Param) -> cst.Param:
            if p.name.value not in edit.params or p.default is not None:
                return p
            changes = {"default": cst.Name("None"), "equal": equal(p)}
            if p.name.value == "intermediate_tensors" and edit.style and p.annotation is not None:
                changes["annotation"] = p.annotation.with_changes(
                    annotation=self._optional(p.annotation.annotation, edit)
                )
            return p.with_changes(**changes)

        return params.with_changes(
            posonly_params=[fix(p) for p in params.posonly_params],
            params=[fix(p) for p in params.params],
            kwonly_params=[fix(p) for p in params.kwonly_params],
        )

    def _optional(self, annotation: cst.BaseExpression, edit: edits.DefaultNone) -> cst.BaseExpression:
        if isinstance(annotation, cst.SimpleString) and isinstance(annotation.evaluated_value, str):
            inner = annotation.evaluated_value
            q = annotation.quote
            wrapped = f"{inner} | None" if edit.style == "pipe" else f"Optional[{inner}]"
            if edit.style == "optional":
                self.need_import(edit, "typing", "Optional")
            return cst.SimpleString(f"{q}{wrapped}{q}")
        if edit.style == "optional":
            self.need_import(edit, "typing", "Optional")
            return cst.Subscript(
                value=cst.Name("Optional"),
                slice=[cst.SubscriptElement(slice=cst.Index(value=annotation))],
            )
        return cst.BinaryOperation(left=annotation, operator=cst.BitOr(), right=cst.Name("None"))


def _param(params: cst.Parameters, name: str) -> cst.Param | None:
    for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
        if p.name.value == name:
            return p
    return None


def _equal_style(params: cst.Parameters):
    """The `=` of a sibling with a default (annotated or not, per PEP 8), else PEP 8's own."""
    siblings = [p for p in [*params.posonly_params, *params.params, *params.kwonly_params] if p.default]

    def pick(p: cst.Param) -> cst.AssignEqual:
        annotated = p.annotation is not None
        for s in siblings:
            if (s.annotation is not None) == annotated and isinstance(s.equal, cst.AssignEqual):
                return s.equal
        space = cst.SimpleWhitespace(" " if annotated else "")
        return cst.AssignEqual(whitespace_before=space, whitespace_after=space)

    return pick
