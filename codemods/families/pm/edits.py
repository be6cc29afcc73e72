"""The packed-modules family's kind of edit, applied by the transformer `fixes` registers for it.
The shapes it shares are `codemods.edits`'."""

from __future__ import annotations

from dataclasses import dataclass

from ...edits import Edit, LiteralEdit

__all__ = ["Edit", "PackedEntry"]


@dataclass(frozen=True)
class PackedEntry(LiteralEdit):
    """Make the `packed_modules_mapping` dict literal on `line` (whose keys are `existing`) map
    `keys[0]` to `shards`: its value rewritten in place when the key is there, else the entry
    `rename` renamed to it (when given), else a new entry appended in the dict's layout. `flat`
    writes the value on one line (a dotted entry's names, once plain, need no more)."""

    shards: tuple[str, ...]
    rename: str = ""
    flat: bool = False
