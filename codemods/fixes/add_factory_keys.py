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
        elements = _extended(updated, edit.args[1])
        closer = _closer(updated)
        if isinstance(closer, cst.ParenthesizedWhitespace) and isinstance(_opener(updated), cst.ParenthesizedWhitespace):
            comment = closer.first_line
            elements[-len(edit.args[1]) - 1] = _with_comment(elements[-len(edit.args[1]) - 1], comment)
            updated = _set_closer(updated, closer.with_changes(first_line=cst.TrailingWhitespace()))
        return updated.with_changes(elements=elements)

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
    opener = _opener(node)
    new = [cst.Element(value=cst.SimpleString(f"{quote}{key}{quote}")) for key in keys]
    if isinstance(opener, cst.ParenthesizedWhitespace):
        return elements[:-1] + _multiline(last, new, opener)
    separator = elements[-2].comma if len(elements) > 1 and isinstance(elements[-2].comma, cst.Comma) else (
        cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    )
    chain = [last, *new]
    return elements[:-1] + [
        e.with_changes(comma=separator if i < len(chain) - 1 else last.comma) for i, e in enumerate(chain)
    ]


def _opener(node) -> cst.BaseParenthesizableWhitespace:
    if isinstance(node, cst.List):
        return node.lbracket.whitespace_after
    return node.lpar[0].whitespace_after if node.lpar else cst.SimpleWhitespace("")


def _closer(node) -> cst.BaseParenthesizableWhitespace:
    if isinstance(node, cst.List):
        return node.rbracket.whitespace_before
    return node.rpar[0].whitespace_before if node.rpar else cst.SimpleWhitespace("")


def _set_closer(node, whitespace):
    if isinstance(node, cst.List):
        return node.with_changes(rbracket=node.rbracket.with_changes(whitespace_before=whitespace))
    return node.with_changes(rpar=[node.rpar[0].with_changes(whitespace_before=whitespace), *node.rpar[1:]])


def _with_comment(element: cst.Element, first_line: cst.TrailingWhitespace) -> cst.Element:
    """Move the comment that closed the list onto the (formerly last) element's line."""
    comma = element.comma
    if first_line.comment is None or not isinstance(comma, cst.Comma):
        return element
    if not isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return element
    return element.with_changes(
        comma=comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=first_line))
    )


def _multiline(last: cst.Element, new: list[cst.Element], opener: cst.ParenthesizedWhitespace) -> list[cst.Element]:
    """One key per line: each new key on its own line at the elements' indentation; the old
    last element keeps its comment, the new last one takes over the closing line."""
    def line_break(template: cst.ParenthesizedWhitespace, first_line=None) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(
            first_line=first_line or cst.TrailingWhitespace(),
            indent=template.indent,
            last_line=template.last_line,
        )

    between = cst.Comma(whitespace_after=line_break(opener))
    closing = last.comma
    if isinstance(closing, cst.Comma) and isinstance(closing.whitespace_after, cst.ParenthesizedWhitespace):
        kept = closing.with_changes(
            whitespace_after=line_break(opener, closing.whitespace_after.first_line).with_changes(
                empty_lines=closing.whitespace_after.empty_lines
            )
        )
        final = closing.with_changes(whitespace_after=line_break(closing.whitespace_after))
    else:
        kept, final = between, closing
    out = [last.with_changes(comma=kept)]
    for i, element in enumerate(new):
        out.append(element.with_changes(comma=final if i == len(new) - 1 else between))
    return out
