"""Append elements to a list, tuple or dict literal in its own layout.

One-line literals get `, new`; one-element-per-line literals get each new element on its own
line at the elements' indentation, with the trailing comma (or its absence) kept at the end and
comments left on the lines they were written on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import libcst as cst

Literal: TypeAlias = cst.List | cst.Tuple | cst.Dict


def append(node: Literal, new: Sequence[cst.BaseElement | cst.BaseDictElement]) -> Literal:
    elements = list(node.elements)
    last = elements[-1]
    opener = _opener(node)
    closer = _closer(node)
    if not isinstance(opener, cst.ParenthesizedWhitespace):
        separator = elements[-2].comma if len(elements) > 1 and isinstance(elements[-2].comma, cst.Comma) else (
            cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        chain = [last, *new]
        return node.with_changes(elements=elements[:-1] + [
            e.with_changes(comma=separator if i < len(chain) - 1 else last.comma) for i, e in enumerate(chain)
        ])
    tail = _multiline(last, new, opener)
    if isinstance(closer, cst.ParenthesizedWhitespace):
        tail[0] = _with_comment(tail[0], closer.first_line)
        node = _set_closer(node, closer.with_changes(first_line=cst.TrailingWhitespace()))
    return node.with_changes(elements=elements[:-1] + tail)


def _opener(node: Literal) -> cst.BaseParenthesizableWhitespace:
    if isinstance(node, cst.List):
        return node.lbracket.whitespace_after
    if isinstance(node, cst.Dict):
        return node.lbrace.whitespace_after
    return node.lpar[0].whitespace_after if node.lpar else cst.SimpleWhitespace("")


def _closer(node: Literal) -> cst.BaseParenthesizableWhitespace:
    if isinstance(node, cst.List):
        return node.rbracket.whitespace_before
    if isinstance(node, cst.Dict):
        return node.rbrace.whitespace_before
    return node.rpar[0].whitespace_before if node.rpar else cst.SimpleWhitespace("")


def _set_closer(node: Literal, whitespace) -> Literal:
    if isinstance(node, cst.List):
        return node.with_changes(rbracket=node.rbracket.with_changes(whitespace_before=whitespace))
    if isinstance(node, cst.Dict):
        return node.with_changes(rbrace=node.rbrace.with_changes(whitespace_before=whitespace))
    return node.with_changes(rpar=[node.rpar[0].with_changes(whitespace_before=whitespace), *node.rpar[1:]])


def _with_comment(element, first_line: cst.TrailingWhitespace):
    """Move the comment that closed the literal onto the (formerly last) element's line."""
    comma = element.comma
    if first_line.comment is None or not isinstance(comma, cst.Comma):
        return element
    if not isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return element
    return element.with_changes(
        comma=comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=first_line))
    )


def _line_break(template: cst.ParenthesizedWhitespace, first_line=None) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=first_line or cst.TrailingWhitespace(),
        indent=template.indent,
        last_line=template.last_line,
    )


def _multiline(last, new: Sequence, opener: cst.ParenthesizedWhitespace) -> list:
    between = cst.Comma(whitespace_after=_line_break(opener))
    closing = last.comma
    if isinstance(closing, cst.Comma) and isinstance(closing.whitespace_after, cst.ParenthesizedWhitespace):
        kept = closing.with_changes(
            whitespace_after=_line_break(opener, closing.whitespace_after.first_line).with_changes(
                empty_lines=closing.whitespace_after.empty_lines
            )
        )
        final = closing.with_changes(whitespace_after=_line_break(closing.whitespace_after))
    else:
        kept, final = between, closing
    out = [last.with_changes(comma=kept)]
    for i, element in enumerate(new):
        out.append(element.with_changes(comma=final if i == len(new) - 1 else between))
    return out
