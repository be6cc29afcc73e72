"""Add keys to a hand-written producer's dict literal, each a copy of the first entry's value."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import LiteralTransformer
from ....fixes.layout import append
from .. import edits


class CloneDictEntry(LiteralTransformer[edits.CloneDictEntry]):
    edit = edits.CloneDictEntry
    reach = "statement"

    def leave_Dict(self, original: cst.Dict, updated: cst.Dict) -> cst.BaseExpression:
        edit = self.literal_edit(original)
        template = updated.elements[0] if updated.elements else None
        if edit is None or not isinstance(template, cst.DictElement):
            return updated
        self.touch(original, edit)
        quote = template.key.quote if isinstance(template.key, cst.SimpleString) else '"'
        new = [
            template.with_changes(key=cst.SimpleString(f"{quote}{key}{quote}"), value=template.value.deep_clone())
            for key in edit.keys
        ]
        return append(updated, new)
