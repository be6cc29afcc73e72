"""Each fix as the smallest text replacements that turn a file's old text into its fixed text."""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from ..apply import FixError, rewrite
from ..findings import FileChange, Finding, Report

LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Replacement:
    """Replace the text from `start` up to (not including) `end` with `text`.

    Positions are (line, column), both 1-based, columns in code points; `start == end` inserts.
    """

    start: tuple[int, int]
    end: tuple[int, int]
    text: str


def replacements(before: str, after: str) -> list[Replacement]:
    """Line-level diff, each changed block trimmed to its differing characters; in file order."""
    old = _lines(before)
    new = _lines(after)
    starts = _line_starts(before)
    offset = [0]
    for line in old:
        offset.append(offset[-1] + len(line))
    found = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        was, now = "".join(old[i1:i2]), "".join(new[j1:j2])
        head = _common_prefix(was, now)
        tail = _common_prefix(was[head:][::-1], now[head:][::-1])
        base = offset[i1]
        found.append(
            Replacement(
                _position(starts, base + head),
                _position(starts, base + len(was) - tail),
                now[head : len(now) - tail],
            )
        )
    return found


def per_finding(preview: Report) -> dict[Finding, list[tuple[Path, list[Replacement]]]]:
    """The replacements of each finding that a `fix` run (`preview`, nothing written) fixed.

    A file fixed for one finding gives its whole change; a file fixed for several has each
    finding's own edits replayed on its original bytes, so every fix stands alone.
    """
    result: dict[Finding, list[tuple[Path, list[Replacement]]]] = {}
    for change in preview.changes:
        for finding in change.findings:
            after = change.after if len(change.findings) == 1 else _alone(change, finding)
            if after is None:
                continue
            found = replacements(_text(change.before), _text(after))
            if found:
                result.setdefault(finding, []).append((change.path, found))
    return result


def _alone(change: FileChange, finding: Finding) -> bytes | None:
    edits = [e for e in finding.fix.edits if e.path == change.path]
    try:
        return rewrite(change.before, edits).after
    except FixError:
        return None


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _lines(text: str) -> list[str]:
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
