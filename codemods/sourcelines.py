"""Source lines numbered as Python numbers them, for evidence and messages.

`str.splitlines` also breaks at form feeds, vertical tabs, `\\x1c`-`\\x1e`, `\\x85`, U+2028 and
U+2029, which Python's tokenizer (and so every line number `ast` reports) treats as ordinary
characters: after one of them, every line would be off. Only `\\n`, `\\r\\n` and `\\r` end a line.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from .discover import read_regular

LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """`text`'s lines; with `keepends`, each keeps its line end, so they join back to `text`."""
    if not keepends:
        return LINE_END.split(text)[: -1 if text.endswith(("\n", "\r")) else None] if text else []
    if "\r" not in text:  # one kind of line end: `str.split` finds them, a third of `--diff`'s time
        lines = text.split("\n")
        last = lines.pop()
        return [line + "\n" for line in lines] + ([last] if last else [])
    ends = [m.end() for m in LINE_END.finditer(text)]
    bounds = [0, *ends] + ([len(text)] if not ends or ends[-1] != len(text) else [])
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


def decode(data: bytes) -> str:
    """A source file's text in its declared encoding (UTF-8 by default); bad bytes replaced."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        encoding = "utf-8"
    try:
        return data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


class SourceLines:
    """Lines of files read from disk once each; a file that cannot be read has no lines."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def line(self, path: str, number: int) -> str:
        """Line `number` (1-based) of `path`, stripped; "" when there is no such line."""
        if path not in self._lines:
            try:
                self._lines[path] = split_lines(decode(read_regular(Path(path))))
            except OSError:
                self._lines[path] = []
        lines = self._lines[path]
        return lines[number - 1].strip() if 0 < number <= len(lines) else ""

