"""Add keys to a hand-written producer's dict literal, each a copy of the first entry's value."""

from __future__ import annotations

import libcst as cst

from .base import EditTransformer
from .layout import append


class CloneDictEntry(EditTransformer):
    """Edit args: (existing keys, keys to add)."""

    kind = "clone_entry"

    def leave_Dict(self, original: cst.Dict, updated: cst.Dict) -> cst.BaseExpression:
        edit = self.literal_edit(original)
        if edit is None:
            return updated
        self.touch(original, edit)
        template = updated.elements[0]
        quote = template.key.quote if isinstance(template.key, cst.SimpleString) else '"'
        new = [
            template.with_changes(key=cst.SimpleString(f"{quote}{key}{quote}"), value=template.value.deep_clone())
            for key in edit.args[1]
        ]
        return append(updated, new)
