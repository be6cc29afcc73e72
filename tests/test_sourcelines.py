"""`split_lines`: lines as Python numbers them, whatever the line ends."""

from __future__ import annotations

import re

import pytest

from contractfix.sourcelines import split_lines

TEXTS = [
    "", "\n", "\n\n", "a", "a\n", "a\nb", "a\n\nb\n", "x = 1\x0cy\x0b\x1c\x85\u2028z\n", "a\r\nb\rc\n", "\r", "a\r\n",
]


def _by_regex(text: str) -> list[str]:
    """Each line with its end, cut after every `\\r\\n`, `\\r` or `\\n` and nothing else."""
    return [m.group() for m in re.finditer(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)]


@pytest.mark.parametrize("text", TEXTS)
def test_lines_keep_their_ends_and_join_back(text: str) -> None:
    """`--diff` splits every rewritten file: the text with `\\n` ends alone takes a quicker path,
    which must cut where the general one does (not at a form feed or U+2028, as `splitlines`)."""
    lines = split_lines(text, keepends=True)
    assert "".join(lines) == text
    assert lines == _by_regex(text)
    assert split_lines(text) == [line.rstrip("\r\n") for line in lines]
