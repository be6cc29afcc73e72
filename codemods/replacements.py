"""A file's change as the smallest text replacements that turn its old text into its new text."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from . import linediff

LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Replacement:
    """Replace the text from `start` up to (not including) `end` with `text`.

    Positions are (line, column), both 1-based, columns in code points; `start == end` inserts.
    """

    start: tuple[int, int]
    end: tuple[int, int]
    text: str


@dataclass(frozen=True)
class Hunk:
    """One changed block of lines: old lines `first` up to `last` (0-based, `last` excluded;
    equal for an insertion before line `first`), and its replacement."""

    first: int
    last: int
    replacement: Replacement
    inserted: tuple[str, ...]
    """The new lines of a pure insertion (empty otherwise)."""


def replacements(before: str, after: str) -> list[Replacement]:
    """Line-level diff, each changed block trimmed to its differing characters; in file order."""
    return [h.replacement for h in hunks(before, after)]


def hunks(before: str, after: str) -> list[Hunk]:
    old = lines(before)
    new = lines(after)
    starts = _line_starts(before)
    offset = [0]
    for line in old:
        offset.append(offset[-1] + len(line))
    found = []
    for tag, i1, i2, j1, j2 in linediff.opcodes(old, new):
        if tag == "equal":
            continue
        was, now = "".join(old[i1:i2]), "".join(new[j1:j2])
        head = _common_prefix(was, now)
        tail = _common_prefix(was[head:][::-1], now[head:][::-1])
        base = offset[i1]
        replacement = Replacement(
            _position(starts, base + head),
            _position(starts, base + len(was) - tail),
            now[head : len(now) - tail],
        )
        found.append(Hunk(i1, i2, replacement, tuple(new[j1:j2]) if i1 == i2 else ()))
    return found


def lines(text: str) -> list[str]:
    ends = [m.end() for m in LINE_END.finditer(text)]
    bounds = [0, *ends] + ([len(text)] if not ends or ends[-1] != len(text) else [])
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in LINE_END.finditer(text))]


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    line = bisect.bisect_right(starts, offset) - 1
    return line + 1, offset - starts[line] + 1


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
