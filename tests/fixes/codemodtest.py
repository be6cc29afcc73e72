"""Before/after tests of the fix transformers, in the style of LibCST's `CodemodTest.assertCodemod`."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent
from unittest import mock

from contractfix import pieces
from contractfix.apply import Rewrite, rewrite
from contractfix.edits import Edit

PATH = Path("model.py")


def assert_codemod(before: str, after: str, *edits: Edit) -> Rewrite:
    """Apply `edits` to the dedented `before`; the result must be the dedented `after`, byte for
    byte, and the same (spans and imports too) whether libcst reads the pieces the edits touch or
    the whole file."""
    result = rewrite(dedent(before).encode(), list(edits))
    assert result.after.decode() == dedent(after)
    with mock.patch.object(pieces, "cut", lambda *args: None):
        assert rewrite(dedent(before).encode(), list(edits)) == result
    return result
