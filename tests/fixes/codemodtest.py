"""Before/after tests of the fix transformers, in the style of LibCST's `CodemodTest.assertCodemod`."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from contractfix.apply import Rewrite, rewrite
from contractfix.edits import Edit

PATH = Path("model.py")


def assert_codemod(before: str, after: str, *edits: Edit) -> Rewrite:
    """Apply `edits` to the dedented `before`; the result must be the dedented `after`, byte for byte."""
    result = rewrite(dedent(before).encode(), list(edits))
    assert result.after.decode() == dedent(after)
    return result
