"""`prefix: str = ""` appended to a class's `__init__` parameters: on the `def` line while it fits,
else one parameter per line with a trailing comma (kept as is when already one per line)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits
from .add_prefix import COMMA, newline

PARAM = 'prefix: str = ""'


class AddPrefixParameter(EditTransformer[edits.AddPrefixParameter]):
    edit = edits.AddPrefixParameter

    def __init__(self, found) -> None:
        super().__init__(found)
        self.classes: list[str] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.lines = node.code.split("\n")

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.classes.pop()
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if original.name.value != "__init__" or not self.classes:
            return updated
        edit = next((e for e in self.edits if e not in self.applied and e.cls == self.classes[-1]), None)
        if edit is None:
            return updated
        self.touch(original, edit)
        params = updated.params
        field = "kwonly_params" if params.kwonly_params else "params"
        found = list(getattr(params, field))
        new = cst.Param(
            cst.Name("prefix"),
            annotation=cst.Annotation(cst.Name("str"), whitespace_before_indicator=cst.SimpleWhitespace("")),
            equal=cst.AssignEqual(),
            default=cst.SimpleString('""'),
        )
        last = found[-1]
        line = self.lines[self.get_metadata(PositionProvider, original.name).start.line - 1]
        indent = len(line) - len(line.lstrip())
        if isinstance(updated.whitespace_before_params, cst.ParenthesizedWhitespace) and len(found) > 1 and all(
            isinstance(p.comma, cst.Comma) and isinstance(p.comma.whitespace_after, cst.ParenthesizedWhitespace)
            for p in found[:-1]
        ):
            trailing = last.comma if isinstance(last.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
            moved = last.whitespace_after_param
            found[-1] = last.with_changes(comma=found[-2].comma, whitespace_after_param=cst.SimpleWhitespace(""))
            found.append(new.with_changes(comma=trailing, whitespace_after_param=moved))
            return updated.with_changes(params=params.with_changes(**{field: found}))
        flat = [p.with_changes(comma=COMMA, whitespace_after_param=cst.SimpleWhitespace("")) for p in found]
        code = cst.Module([]).code_for_node
        text = ", ".join(code(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for p in flat) + ", " + PARAM
        one_line = not isinstance(updated.whitespace_before_params, cst.ParenthesizedWhitespace)
        if one_line and field == "params" and not params.star_arg and len(line) + len(", " + PARAM) <= edit.width:
            return updated.with_changes(params=params.with_changes(params=[*flat, new]))
        if field != "params" or params.star_arg or "\n" in text:
            return updated.with_changes(params=params.with_changes(**{field: [*flat, new]}))
        inner = indent + 4
        rows = [p.with_changes(comma=cst.Comma(whitespace_after=newline(inner))) for p in flat]
        return updated.with_changes(
            whitespace_before_params=newline(inner),
            params=params.with_changes(params=[*rows, new.with_changes(comma=cst.Comma(whitespace_after=newline(indent)))]),
        )
