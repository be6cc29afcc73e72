"""Where a module's top-level statements start and end, found without parsing: a scan for the
lines that begin a statement at column 0, outside strings, brackets and line continuations.

A scan that meets something it cannot place (an unterminated string, a line ending other than
`\\n` / `\\r\\n`, a form feed) gives up, and the caller parses the whole module. A misplaced
boundary (a line it took for a statement's start) can only split a statement, which makes the
piece fail to parse, so the caller again falls back to parsing the whole module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from unicodedata import normalize

_STRING = {
    quote: re.compile(rf"{quote}[^{quote}\\\n]*(?:\\[\s\S][^{quote}\\\n]*)*{quote}") for quote in "\"'"
}
_TRIPLE = {
    quote: re.compile(rf"{quote * 3}[^{quote}\\]*(?:(?:\\[\s\S]|{quote}(?!{quote * 2}))[^{quote}\\]*)*{quote * 3}")
    for quote in "\"'"
}
_START = r"[^\s)\]}\0\\]"
"""What a line that starts a statement starts with: anything but a blank, a closing bracket, a
string's continued line (NUL in the masked text) or a backslash (`(a, b) = f()` starts one)."""
_STATEMENT_START = re.compile(r"\n" + _START)
"""A line that starts a statement (a newline searched for, not `^` in multiline mode, which the
regex engine tries at every offset: four times as slow)."""
_FIRST_STATEMENT = re.compile(_START)
_KEYWORD = re.compile(r"(class|def|async|if|try|import|from|else|elif|except|finally)\b")
_ONE_LINE_HEADER = re.compile(r"class[ \t]+\w+[ \t]*(?:\([^()\n]*\))?[ \t]*:")
_CONTINUATIONS = {"else", "elif", "except", "finally"}
_KINDS = {"class": "class", "def": "def", "async": "def", "if": "compound", "try": "compound",
          "import": "import", "from": "import"}


class Unplaceable(Exception):
    """The scan cannot place the statements of this text: parse all of it."""


@dataclass(frozen=True)
class Statement:
    """One top-level statement: lines `start`..`end` (1-based, decorators and trailing blank or
    comment lines included). For a class or function, `head` is its `class` / `def` line; for a
    class, `colon` is the line of the colon ending its header, and `inline` is True when the body
    follows that colon on the same line."""

    kind: str  # "class" | "def" | "import" | "compound" (if / try) | "other"
    start: int
    end: int
    head: int = 0
    colon: int = 0
    inline: bool = False


def outline(text: str) -> list[Statement]:
    """The top-level statements of `text`, in order. Raises `Unplaceable`."""
    masked = _checked(text)
    found = _found(masked)
    total = text.count("\n") + 1
    statements = []
    for index, (kind, start, head, at) in enumerate(found):
        end = found[index + 1][1] - 1 if index + 1 < len(found) else total
        colon, inline = _header_end(masked, at, head) if kind == "class" else (0, False)
        statements.append(Statement(kind, start, end, head if kind in ("class", "def") else 0, colon, inline))
    return statements


@dataclass(frozen=True)
class Definition:
    """A top-level class or function: lines `first` (its first decorator's) to `last` (its last
    line of code), and the line its body starts on (`body`; its header's last line where the
    body follows the colon there, then `inline`)."""

    kind: str  # "class" | "def"
    name: str
    first: int
    last: int
    body: int
    inline: bool


_NAME = re.compile(r"(?:class|(?:async[ \t]+)?def)[ \t]+(\w+)")


def definitions(text: str) -> list[Definition]:
    """The top-level classes and functions of `text`, in order, found as `outline` finds
    statements (what `ast` would say of each, without parsing). Raises `Unplaceable`."""
    masked = _checked(text)
    found = _found(masked)
    rows = masked.split("\n")
    defined = []
    for index, (kind, start, head, at) in enumerate(found):
        if kind not in ("class", "def"):
            continue
        end = found[index + 1][1] - 1 if index + 1 < len(found) else len(rows)
        name = _NAME.match(masked, at)
        if name is None:
            raise Unplaceable(f"line {head}: a {kind} without a name")
        colon, inline = _header_end(masked, at, head)
        last = end
        while last > colon and not rows[last - 1].strip():  # the blank and comment lines after it
            last -= 1
        body = colon if inline else next((n for n in range(colon + 1, last + 1) if rows[n - 1].strip()), 0)
        if not body:
            raise Unplaceable(f"line {head}: a {kind} without a body")
        word = name.group(1)  # as Python reads an identifier: NFKC-normalized
        defined.append(Definition(kind, word if word.isascii() else normalize("NFKC", word), start, last, body, inline))
    return defined


def _checked(text: str) -> str:
    """`text` masked (`_masked`), or `Unplaceable` where a line end or form feed could read
    otherwise to Python than to the scan."""
    if "\f" in text or "\r" in text and text.count("\r") != text.count("\r\n"):
        raise Unplaceable("form feed or lone carriage return")
    return _masked(text)


def _found(masked: str) -> list[list]:
    """[kind, first line, `class` / `def` line, offset of that line] of each top-level
    statement, in order."""
    found: list[list] = []
    depth = 0
    line = 1
    last = 0
    for at in _statement_starts(masked):
        between = masked[last:at]
        depth += sum(map(between.count, "([{")) - sum(map(between.count, ")]}"))
        line += between.count("\n")
        last = at
        if depth or at and masked[at - 2 : at - 1] == "\\" or masked[at - 3 : at - 1] == "\\\r":
            continue
        word = _KEYWORD.match(masked, at)
        keyword = word.group(1) if word else ""
        if keyword in _CONTINUATIONS:
            continue
        if found and found[-1][0] == "@":  # a decorator's class or function, or another decorator
            if masked[at] != "@":
                found[-1][0] = _KINDS.get(keyword, "other")
                found[-1][2:] = [line, at]
            continue
        kind = "@" if masked[at] == "@" else _KINDS.get(keyword, "other")
        found.append([kind, line, line, at])
    if depth + sum(map(masked[last:].count, "([{")) - sum(map(masked[last:].count, ")]}")):
        raise Unplaceable("unbalanced brackets")
    return found


def _statement_starts(masked: str) -> Iterator[int]:
    """The offset of each line that can start a statement (`_START`)."""
    if _FIRST_STATEMENT.match(masked):
        yield 0
    for match in _STATEMENT_START.finditer(masked):
        yield match.start() + 1


def _masked(text: str) -> str:
    """`text` with each comment removed and each string `S`, keeping its line breaks, each
    continued line starting with NUL so that it never looks like a statement's start. The next
    quote and `#` are found with `str.find` (far faster than a regex scanning for either), and
    only each string's end by a regex."""
    out = []
    end = len(text)
    at = 0
    double, single, hash_ = text.find('"'), text.find("'"), text.find("#")
    while True:
        start = min(double if double >= 0 else end, single if single >= 0 else end, hash_ if hash_ >= 0 else end)
        out.append(text[at:start])
        if start == end:
            return "".join(out)
        char = text[start]
        if char == "#":
            stop = text.find("\n", start)
            at = end if stop < 0 else stop
        else:
            triple = _TRIPLE[char].match(text, start) if text.startswith(char * 3, start) else None
            found = triple or _STRING[char].match(text, start)
            if found is None:
                raise Unplaceable("unterminated string")
            breaks = text.count("\n", start, found.end())
            out.append("S" + "\n\0" * breaks if breaks else "S")
            at = found.end()
        if 0 <= double < at:
            double = text.find('"', at)
        if 0 <= single < at:
            single = text.find("'", at)
        if 0 <= hash_ < at:
            hash_ = text.find("#", at)


def _header_end(masked: str, at: int, head: int) -> tuple[int, bool]:
    """The line of the colon ending a class or function header, and whether the body follows it
    there."""
    one = _ONE_LINE_HEADER.match(masked, at)
    if one:
        colon, line = one.end(), head
    else:
        depth, colon, line = 0, at, head
        while True:
            if colon == len(masked):
                raise Unplaceable("class header without a colon")
            char = masked[colon]
            colon += 1
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
            elif char == "\n":
                line += 1
            elif char == ":" and not depth:
                break
    stop = masked.find("\n", colon)
    rest = masked[colon : stop if stop >= 0 else len(masked)]
    return line, bool(rest.strip()) and rest.strip() != "\\"
