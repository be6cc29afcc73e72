"""Write one entry of a `packed_modules_mapping` dict literal: a value's shard names rewritten in
place (quotes, commas and line breaks kept), a key renamed, or an entry appended in the dict's
own layout."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import LiteralTransformer
from ....fixes.layout import append
from .. import edits


class PackedEntry(LiteralTransformer[edits.PackedEntry]):
    edit = edits.PackedEntry
    reach = "statement"

    def leave_Dict(self, original: cst.Dict, updated: cst.Dict) -> cst.BaseExpression:
        while (edit := self.literal_edit(original)) is not None:
            changed = _written(updated, edit)
            if changed is None:
                return updated
            self.touch(original, edit)
            updated = changed
        return updated


def _written(node: cst.Dict, edit: edits.PackedEntry) -> cst.Dict | None:
    """`node` with the edit's entry written, or None when it cannot be written as planned."""
    key = edit.keys[0]
    elements = list(node.elements)
    for index, element in enumerate(elements):
        name = _key(element)
        if isinstance(element, cst.DictElement) and (name == key or (edit.rename and name == edit.rename)):
            value = _flat(element.value, edit.shards) if edit.flat else _shards(element.value, edit.shards)
            if value is None:
                return None
            if name != key:
                assert isinstance(element.key, cst.SimpleString)
                quote = element.key.quote
                element = element.with_changes(key=cst.SimpleString(f"{quote}{key}{quote}"))
            elements[index] = element.with_changes(value=value)
            return node.with_changes(elements=elements)
    template = next((e for e in elements if isinstance(e, cst.DictElement) and isinstance(e.value, cst.List)), None)
    if template is None or not isinstance(template.key, cst.SimpleString):
        return None
    quote = template.key.quote
    new = template.with_changes(key=cst.SimpleString(f"{quote}{key}{quote}"), value=_one_line(edit.shards, quote))
    result = append(node, [new])
    assert isinstance(result, cst.Dict)
    return result


def _key(element: cst.BaseDictElement) -> str | None:
    key = getattr(element, "key", None)
    value = key.evaluated_value if isinstance(key, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def _one_line(shards: tuple[str, ...], quote: str) -> cst.List:
    strings = [cst.SimpleString(f"{quote}{shard}{quote}") for shard in shards]
    return cst.List([
        cst.Element(s, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(strings) - 1 else
                    cst.MaybeSentinel.DEFAULT)
        for i, s in enumerate(strings)
    ])


def _flat(value: cst.BaseExpression, shards: tuple[str, ...]) -> cst.BaseExpression | None:
    """A one-line list of `shards` in the quotes of `value`'s first string, for the list `value`."""
    if not isinstance(value, cst.List) or not value.elements or not isinstance(value.elements[0].value, cst.SimpleString):
        return None
    return _one_line(shards, value.elements[0].value.quote)


def _shards(value: cst.BaseExpression, shards: tuple[str, ...]) -> cst.BaseExpression | None:
    """The list or tuple `value` holding `shards`: each string rewritten in its own quotes; extra
    ones dropped (the last kept takes the old last's comma), missing ones appended in its layout."""
    if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements:
        return None
    old = list(value.elements)
    if not all(isinstance(e.value, cst.SimpleString) for e in old):
        return None
    quote = old[0].value.quote  # type: ignore[attr-defined]
    kept = [
        e.with_changes(value=cst.SimpleString(f"{e.value.quote}{shard}{e.value.quote}"))  # type: ignore[attr-defined]
        for e, shard in zip(old, shards, strict=False)
    ]
    if len(shards) < len(old):
        kept[-1] = kept[-1].with_changes(comma=old[-1].comma)
        return value.with_changes(elements=kept)
    rewritten = value.with_changes(elements=kept)
    extra = [cst.Element(cst.SimpleString(f"{quote}{shard}{quote}")) for shard in shards[len(old):]]
    return append(rewritten, extra) if extra else rewritten
