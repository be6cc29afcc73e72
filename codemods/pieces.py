"""A file cut for libcst: the top-level classes and functions its edits touch, each to be parsed
alone, and an outline of the file with every top-level class and function folded to a marked
one-statement stand-in, for the steps that read the module's top level (imports).

libcst costs about a millisecond a line wherever a fix lands, so a fix in a file of 20,000 lines
took 30 s; cut, it reads only what it edits. The outline keeps what those steps see: every other
top-level statement as written, the stand-ins' kinds and names, and each block's first indent
(libcst's default indent), so new code gets the layout it would get in the whole file.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import os
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .analysis.outline import Definition, Unplaceable, definitions
from .analysis.syntax import blocks
from .edits import Edit

FOLDED = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Piece:
    """Lines `first` to `last` (1-based, inclusive) of the file: a top-level class or function,
    or a method of a top-level class, then under a `class Name:` line of its own (`head`), so
    that the transformers see the class they look for."""

    first: int
    last: int
    head: bytes
    text: bytes
    """`head`, the lines and `tail`."""
    edits: tuple[Edit, ...]
    """The piece's edits, their lines counted in `text`."""
    originals: tuple[Edit, ...]
    tail: bytes = b""
    """A stand-in body after a method's `def` lines, where the piece is those lines alone."""

    @property
    def shift(self) -> int:
        """What a line of `text` adds to be the file's."""
        return self.first - 1 - self.head.count(b"\n")


@dataclass(frozen=True)
class Cut:
    outline: bytes
    pieces: tuple[Piece, ...]
    folds: tuple[tuple[int, int, int], ...]
    """Per fold: its first and last line in the file, and its lines in the outline."""
    marker: bytes

    def joined(self, outline: bytes, rewritten: dict[int, tuple[int, bytes]], source: bytes) -> bytes:
        """The file from a rewritten outline: each stand-in back as the lines it stands for,
        those of a piece as rewritten (`rewritten`: its first line -> its last, its new text)."""
        lines = source.splitlines(keepends=True)
        out = outline.splitlines(keepends=True)
        joined = []
        at = 0
        while at < len(out):
            line = out[at]
            found = line.find(self.marker)
            if found < 0:
                joined.append(line)
                at += 1
                continue
            first, last, size = self.folds[int(line[found + len(self.marker):].split()[0])]
            while first <= last:
                end, text = rewritten.get(first, (first, lines[first - 1]))
                joined.append(text)
                first = end + 1
            at += size
        return b"".join(joined)

    def indent(self) -> str:
        """The indent libcst would take as the file's default: the first block's (the outline
        keeps it), four spaces when there is none."""
        for token in tokenize.tokenize(io.BytesIO(self.outline).readline):
            if token.type == tokenize.INDENT:
                return token.string
        return "    "

    def line_of(self, line: int) -> int:
        """The file's line of outline line `line` (one outside every stand-in)."""
        moved = 0
        for first, last, size in self.folds:
            if first - moved + size > line:
                break
            moved += last - first + 1 - size
        return line + moved


def cut(source: bytes, edits: Sequence[Edit], reach: Callable[[Edit], str] = lambda edit: "method") -> Cut | None:
    """`source` cut around `edits`; None where an edit lies outside every top-level class and
    function, or the file's layout could read differently in pieces (a BOM or a coding cookie,
    mixed or missing line ends, form feeds, a layout the outline scan cannot place). The top
    level is found by that scan, and only the classes and functions the edits touch are
    parsed: the rewrite compiles whole, which proves the rest. A backslash continuation reads
    the same: no top-level class or function can follow one, so each lies whole in a piece or
    the outline. `reach` says what of its method an edit's transformer reads
    (`EditTransformer.reach`): a piece whose every edit reads one statement is that statement
    alone (`_narrowed`), one whose every edit reads a method's `def` lines is those lines alone
    (`_header`)."""
    lines = source.splitlines(keepends=True)
    if not lines or _unusual(source, lines):
        return None
    marker = b"contractfix-fold-" + os.urandom(8).hex().encode() + b"-"
    if marker in source:
        return None
    try:
        defined = definitions(source.decode("utf-8"))
    except (Unplaceable, UnicodeDecodeError):
        return None
    end = lines[0][len(lines[0].rstrip(b"\r\n")):]
    pending = sorted(edits, key=lambda e: e.line)
    taken = 0
    pieces: list[Piece] = []
    folds: list[tuple[int, int, int]] = []
    outline: list[bytes] = []
    at = 1
    for definition in defined:
        first, last = definition.first, definition.last
        outline += lines[at - 1:first - 1]
        stand_in = _stand_in(definition, lines, marker + str(len(folds)).encode(), end)
        folds.append((first, last, stand_in.count(b"\n")))
        outline.append(stand_in)
        at = last + 1
        if taken < len(pending) and pending[taken].line < first:
            return None
        mine = []
        while taken < len(pending) and pending[taken].line <= last:
            mine.append(pending[taken])
            taken += 1
        if not mine:
            continue
        stmt = _parsed(definition, lines, end)
        if stmt is None or any(not first <= n <= last for e in mine for n in _lines(e)):
            return None
        pieces += _methods(stmt, lines, mine, end, reach) or [_piece(first, last, b"", lines, mine)]
    if taken < len(pending):
        return None
    outline += lines[at - 1:]
    return Cut(b"".join(outline), tuple(pieces), tuple(folds), marker)


def _parsed(definition: Definition, lines: list[bytes], end: bytes) -> ast.stmt | None:
    """The class or function `definition` as `ast` reads it at its place in the file; None where
    the scan placed it otherwise than the parse does."""
    text = end * (definition.first - 1) + b"".join(lines[definition.first - 1:definition.last])
    body = ast.parse(text).body
    if len(body) != 1 or not isinstance(body[0], FOLDED) or body[0].name != definition.name:
        return None
    return body[0] if _span(body[0]) == (definition.first, definition.last) else None


def _methods(stmt: ast.stmt, lines: list[bytes], edits: list[Edit], end: bytes,
             reach: Callable[[Edit], str]) -> list[Piece]:
    """The pieces of a class whose every edit lies in one of its methods, or in a statement of
    its body whose edits each read one statement: those methods (or the statements or `def`
    lines in them that their edits read) and those statements (none where an edit lies
    elsewhere, in a nested class, say)."""
    if not isinstance(stmt, ast.ClassDef):
        return []
    head = b"class " + stmt.name.encode() + b":" + end
    found = []
    left = list(edits)
    for inner in stmt.body:
        method = isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
        first, last = _span(inner)
        mine = [e for e in left if all(first <= n <= last for n in _lines(e))]
        reaches = {reach(e) for e in mine}
        if not mine or not method and reaches != {"statement"}:
            continue
        narrowed = (
            _narrowed(inner, lines, mine, head, end) if reaches == {"statement"}
            else _header(inner, lines, mine, head, end) if reaches == {"header"} and method
            else None
        )
        found.append(narrowed or _piece(first, last, head, lines, mine))
        left = [e for e in left if e not in mine]
    return [] if left else found


def _header(method: ast.stmt, lines: list[bytes], edits: list[Edit], head: bytes, end: bytes) -> Piece | None:
    """A method's decorators and `def` lines under `head`, with `pass` standing in for its body
    (`Piece.tail`), where every edit lies in those lines; None where the body starts on the
    `def`'s last line or a comment follows its colon."""
    body = method.body[0]  # type: ignore[attr-defined]
    start, _ = _span(body)
    last = start - 1
    while last >= method.lineno and lines[last - 1].strip(b" \t\r\n")[:1] in (b"", b"#"):
        last -= 1  # the blank and comment lines above the body are the body's
    first, _ = _span(method)
    if last < method.lineno or not lines[last - 1].rstrip(b" \t\r\n").endswith(b":"):
        return None
    if any(not first <= n <= last for e in edits for n in _lines(e)):
        return None
    return _piece(first, last, head, lines, edits, _indent(lines[start - 1]) + b"pass" + end)


def _narrowed(stmt: ast.stmt, lines: list[bytes], edits: list[Edit], head: bytes, end: bytes) -> Piece | None:
    """The innermost statement in `stmt` (a statement of a class's body) that holds every line
    of `edits`, under `head` and a stand-in `if _:` line at the indent of each block around it,
    so that libcst reads it alone at its own indent (a method's 60 lines for one `prefix=`
    made libcst most of `fix`'s time). None where that is `stmt` itself, or where the
    statement shares a line with other code (`x = 1; y = f()`, `if a: y = f()`, `elif`)."""
    wanted = [n for e in edits for n in _lines(e)]
    around: list[ast.stmt] = []
    node = stmt
    while True:
        inside = [s for block in blocks(node) for s in block if _holds(s, wanted)]
        if len(inside) != 1:
            break
        around.append(node)
        node = inside[0]
    if node is stmt:
        return None
    first, last = _span(node)
    start = lines[first - 1]
    indent = _indent(start)
    if (start[len(indent):].startswith(b"elif") or _col(node, first) != len(indent)
            or lines[last - 1][node.end_col_offset or 0:].strip(b" \t\r\n")[:1] not in (b"", b"#")):
        return None
    stand_ins = head
    deepest = b""
    for outer in around:
        level = _indent(lines[outer.lineno - 1])
        if len(level) > len(deepest):
            stand_ins += level + b"if _:" + end
            deepest = level
    if not (len(indent) > len(deepest) and indent.startswith(deepest)):
        return None
    return _piece(first, last, stand_ins, lines, edits)


def _indent(line: bytes) -> bytes:
    return line[:len(line) - len(line.lstrip(b" \t"))]


def _holds(node: ast.stmt, wanted: list[int]) -> bool:
    first, last = _span(node)
    return all(first <= n <= last for n in wanted)


def _span(node: ast.stmt) -> tuple[int, int]:
    """A statement's first line (its decorators') and last line."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))]), node.end_lineno or node.lineno


def _col(node: ast.stmt, line: int) -> int:
    """Where `node` starts on its first line (`line`): its first decorator's `@` for a decorated one."""
    decorators = getattr(node, "decorator_list", ())
    return decorators[0].col_offset - 1 if decorators and line < node.lineno else node.col_offset


def _piece(first: int, last: int, head: bytes, lines: list[bytes], edits: list[Edit], tail: bytes = b"") -> Piece:
    piece = Piece(first, last, head, head + b"".join(lines[first - 1:last]) + tail, (), tuple(edits), tail)
    return dataclasses.replace(piece, edits=tuple(_moved(e, piece.shift) for e in edits))


def _unusual(source: bytes, lines: list[bytes]) -> bool:
    ends = source.count(b"\n")
    crlf = source.count(b"\r\n")
    return (
        source.startswith(b"\xef\xbb\xbf") or b"\f" in source or not source.endswith(b"\n")
        or (crlf not in (0, ends)) or source.count(b"\r") != crlf
        or any(b"coding" in line and line.lstrip().startswith(b"#") for line in lines[:2])
    )


def _stand_in(definition: Definition, lines: list[bytes], mark: bytes, end: bytes) -> bytes:
    """`class Name:` or `def name():`, marked, with `pass` indented as the body's first line
    (libcst takes its default indent from the first indented block), or on the same line for a
    body that does not start on a line of its own."""
    head = b"class " if definition.kind == "class" else b"def "
    head += definition.name.encode() + (b":" if definition.kind == "class" else b"():")
    if definition.inline:
        return head + b" pass  # " + mark + end
    return head + b"  # " + mark + end + _indent(lines[definition.body - 1]) + b"pass" + end


def _lines(edit: Edit) -> list[int]:
    return [getattr(edit, f.name) for f in dataclasses.fields(edit) if f.name == "line" or f.name.endswith("_line")]


def _moved(edit: Edit, by: int) -> Edit:
    """`edit` with each of its lines counted from line `by + 1`."""
    names = [f.name for f in dataclasses.fields(edit) if f.name == "line" or f.name.endswith("_line")]
    return dataclasses.replace(edit, **{name: getattr(edit, name) - by for name in names})
