"""What every fix transformer shares: the edits it applies and the spans it touched."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ..findings import Edit


class EditTransformer(cst.CSTTransformer):
    """Applies the edits of one kind to one module; records the original line spans it changed
    and the `from module import name` imports its new code needs."""

    METADATA_DEPENDENCIES = (PositionProvider,)
    kind = ""

    def __init__(self, edits: list[Edit]) -> None:
        super().__init__()
        self.edits = edits
        self.applied: set[Edit] = set()
        self.spans: list[tuple[int, int]] = []
        self.imports: set[tuple[str, str]] = set()

    def start_line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def touch(self, node: cst.CSTNode, edit: Edit) -> None:
        position = self.get_metadata(PositionProvider, node)
        self.spans.append((position.start.line, position.end.line))
        self.applied.add(edit)
