"""One small libcst transformer per PM kind of edit (`..edits`), registered by the edit's type."""

from __future__ import annotations

from .packed_entry import PackedEntry

TRANSFORMERS = (PackedEntry,)
