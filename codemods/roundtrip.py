"""Parse a file with libcst so that the tree prints back byte for byte, or say why it cannot.

libcst loses two layouts Python accepts (issue 11, item 25): a `\\r` ending the last line
(printed without it) and a form feed in a statement's indentation (dropped, or the file is
refused as a dedent error). The first is kept by telling the module it has a trailing
newline. For the second, each line's leading whitespace up to its last form feed (which the
tokenizer discards: a form feed resets the column) is cut before parsing and put back on the
same line after the edits; a cut line the fix rewrites into another number of lines is
refused. Any other layout libcst would not print back is refused, naming the line.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import libcst as cst

from . import linediff
from .edits import Edit

_FORM_FEED_PREFIX = re.compile(rb"[ \t\f]*\f")


class LayoutError(Exception):
    """libcst cannot reproduce the file byte for byte; the message says where and why."""


@dataclass(frozen=True)
class Parsed:
    """A module that prints back `source` minus `cut` (line index -> bytes cut from its start)."""

    module: cst.Module
    source: bytes
    cut: dict[int, bytes] = field(default_factory=dict)

    def shifted(self, edit: Edit) -> Edit:
        """`edit` located in the cut text (its column moves left by the bytes cut from its line)."""
        prefix = self.cut.get(edit.line - 1)
        return dataclasses.replace(edit, column=edit.column - len(prefix)) if prefix else edit

    def restored(self, after: bytes) -> bytes:
        """The edited text with each cut prefix back at the start of the line it came from."""
        if not self.cut:
            return after
        old = _without(self.source, self.cut).splitlines(keepends=True)
        new = after.splitlines(keepends=True)
        for tag, i1, i2, j1, j2 in linediff.opcodes(old, new):
            if tag not in ("equal", "replace"):
                continue
            for line in range(i1, i2):
                if line not in self.cut:
                    continue
                if i2 - i1 != j2 - j1:
                    raise LayoutError(f"line {line + 1} has a form feed in its indentation and the fix rewrites it")
                new[j1 + line - i1] = self.cut[line] + new[j1 + line - i1]
        return b"".join(new)


def parse(source: bytes) -> Parsed:
    """`source` parsed so that it prints back exactly (see the module docstring)."""
    lines = source.splitlines(keepends=True)
    cut = {i: m.group() for i, line in enumerate(lines) if (m := _FORM_FEED_PREFIX.match(line))}
    try:
        module = _parse(source)
    except cst.ParserSyntaxError:
        if not cut:
            raise
    else:
        if module.bytes == source:
            return Parsed(module, source)
        if not cut:
            raise LayoutError(_difference(source, module.bytes))
    text = _without(source, cut)
    module = _parse(text)
    if module.bytes != text:
        raise LayoutError(_difference(text, module.bytes))
    return Parsed(module, source, cut)


def _parse(source: bytes) -> cst.Module:
    module = cst.parse_module(source)
    if source.endswith(b"\r") and not module.has_trailing_newline:
        module = module.with_changes(has_trailing_newline=True)
    return module


def _without(source: bytes, cut: dict[int, bytes]) -> bytes:
    lines = source.splitlines(keepends=True)
    return b"".join(line[len(cut[i]):] if i in cut else line for i, line in enumerate(lines))


def _difference(source: bytes, printed: bytes) -> str:
    old, new = source.splitlines(keepends=True), printed.splitlines(keepends=True)
    line = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    text = old[line] if line < len(old) else b""
    what = (
        "a form feed" if b"\f" in text
        else "a backslash continuation" if text.rstrip(b"\r\n").endswith(b"\\")
        else "its layout"
    )
    return f"libcst cannot print line {line + 1} back byte for byte ({what})"


def ending(line: bytes) -> bytes:
    """The line break that ends `line` (b"" for none)."""
    return line[len(line.rstrip(b"\r\n")):]


def newline(source: bytes) -> bytes:
    """The line ending most lines of `source` use (`\\n` when none)."""
    endings = [ending(line) for line in source.splitlines(keepends=True)]
    return max((b"\n", b"\r\n", b"\r"), key=endings.count)
