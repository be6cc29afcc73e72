"""Add (or set) a call's `prefix=` argument, laid out as ruff formats vLLM: on the call's line
while the line fits, else the arguments on one indented line, else one per line with a trailing
comma (the call's own layout is kept when it is already one argument per line)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ....fixes.base import EditTransformer
from .. import edits

COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


class AddPrefix(EditTransformer[edits.AddPrefix]):
    edit = edits.AddPrefix
    reach = "statement"

    def visit_Module(self, node: cst.Module) -> None:
        self.lines = node.code.split("\n")

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        position = self.get_metadata(PositionProvider, original)
        edit = next(
            (e for e in self.edits
             if e not in self.applied and (e.line, e.column) == (position.start.line, position.start.column)),
            None,
        )
        if edit is None:
            return updated
        self.touch(original, edit)
        value = cst.parse_expression(edit.value)
        old = [a for a in updated.args if not (a.keyword and a.keyword.value == "prefix")]
        if len(old) < len(updated.args):  # `prefix=""`: set the value where it stands
            return updated.with_changes(args=[
                a.with_changes(value=value) if a.keyword and a.keyword.value == "prefix" else a for a in updated.args
            ])
        new = cst.Arg(value, keyword=cst.Name("prefix"), equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""),
        ))
        return self._laid_out(updated, new, position, edit.width)

    def _laid_out(self, call: cst.Call, new: cst.Arg, position, width: int) -> cst.Call:
        args = list(call.args)
        last = args[-1]
        opener = call.whitespace_before_args
        line = self.lines[position.start.line - 1]
        indent = len(line) - len(line.lstrip())
        inner = indent + 4
        if _exploded(call):
            trailing = last.comma if isinstance(last.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
            between = args[-2].comma if len(args) > 1 else cst.Comma(whitespace_after=opener)
            moved = last.whitespace_after_arg
            last = last.with_changes(comma=between, whitespace_after_arg=cst.SimpleWhitespace(""))
            return call.with_changes(args=[*args[:-1], last, new.with_changes(comma=trailing, whitespace_after_arg=moved)])
        code = cst.Module([]).code_for_node
        flat = [a.with_changes(comma=COMMA, whitespace_after_arg=cst.SimpleWhitespace("")) for a in args] + [new]
        text = ", ".join(code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in flat)
        if position.start.line == position.end.line and not isinstance(opener, cst.ParenthesizedWhitespace):
            if len(line) + len(", " + code(new)) <= width:
                moved = last.whitespace_after_arg
                last = last.with_changes(comma=COMMA, whitespace_after_arg=cst.SimpleWhitespace(""))
                return call.with_changes(args=[*args[:-1], last, new.with_changes(whitespace_after_arg=moved)])
        if inner + len(text) <= width:
            return _hugged(call, flat, inner, indent)
        return call.with_changes(
            whitespace_before_args=newline(inner),
            args=[a.with_changes(comma=cst.Comma(whitespace_after=newline(inner if i < len(flat) - 1 else indent)))
                  for i, a in enumerate(flat)],
        )


def _hugged(call: cst.Call, flat: list[cst.Arg], inner: int, indent: int) -> cst.Call:
    """`f(\\n    a, b, prefix=...\\n)`: the arguments on one indented line."""
    return call.with_changes(
        whitespace_before_args=newline(inner),
        args=[*flat[:-1], flat[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=newline(indent))],
    )


def _exploded(call: cst.Call) -> bool:
    """One argument per line: a newline after `(` and after every comma between arguments."""
    args = call.args
    return isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace) and len(args) > 1 and all(
        isinstance(a.comma, cst.Comma) and isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace)
        for a in args[:-1]
    )


def newline(indent: int) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), indent=False, last_line=cst.SimpleWhitespace(" " * indent),
    )
