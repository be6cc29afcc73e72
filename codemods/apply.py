"""Apply fix plans to source bytes with libcst, verify the result, and write it atomically."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import PositionProvider

from . import linediff, pieces, roundtrip
from .edits import Edit
from .findings import Finding
from .fixes import TRANSFORMERS
from .fixes.base import EditTransformer
from .fixes.imports import add_imports
from .replacements import Replacement, hunks, lines

TEMP_SUFFIX = ".contractfix"
MAX_REWRITE_BYTES = 2**20
"""The largest file rewritten: libcst takes about 7 s on vLLM's largest source (320 KB), and a file
past this bound (a generated table, say) is reported and left alone rather than held for minutes."""


class FixError(Exception):
    """A fix that could not be applied or verified; the file is left untouched."""


@dataclass(frozen=True)
class Rewrite:
    """A file's bytes before and after its edits, and the original line spans each edit changed."""

    before: bytes
    after: bytes
    spans: tuple[tuple[int, int], ...]
    edit_spans: dict[Edit, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    edit_imports: dict[Edit, frozenset[tuple[str, str]]] = field(default_factory=dict)


def rewrite(source: bytes, edits: Sequence[Edit]) -> Rewrite:
    """Apply every edit of a file in one pass over its tree: each transformer locates its nodes
    by their positions in `source`, so edits never shift one another. libcst reads only the
    top-level classes and functions the edits touch where the file can be cut (`pieces`), and
    the whole file otherwise, or where a piece fails (the whole file's error is the one told)."""
    problem = oversized(source)
    if problem:
        raise FixError(problem)
    quick = _in_pieces(source, edits)
    if quick is not None:
        return quick
    try:
        parsed = roundtrip.parse(source)
    except cst.ParserSyntaxError as error:
        raise FixError(f"libcst cannot parse the file: {error.message}") from None
    except (SyntaxError, UnicodeError, RecursionError) as error:
        raise FixError(f"libcst cannot parse the file: {error}") from None
    except roundtrip.LayoutError as error:
        raise FixError(str(error)) from None
    located = {parsed.shifted(edit): edit for edit in edits}
    try:
        result = _rewrite(parsed.module.bytes, parsed.module, list(located))
        return Rewrite(
            source,
            parsed.restored(result.after),
            result.spans,
            {located[e]: s for e, s in result.edit_spans.items()},
            {located[e]: i for e, i in result.edit_imports.items()},
        )
    except roundtrip.LayoutError as error:
        raise FixError(str(error)) from None
    except RecursionError:
        raise FixError("the file is too deeply nested for libcst") from None
    except UnicodeEncodeError as error:
        raise FixError(f"the fixed text cannot be written in the file's encoding ({error.reason}: {error.object[error.start:error.end]!r})") from None


def oversized(source: bytes) -> str | None:
    """Why `source` is too large to rewrite in bounded time, if it is."""
    if len(source) <= MAX_REWRITE_BYTES:
        return None
    return (f"{len(source) / 2**20:.1f} MB, more than the {MAX_REWRITE_BYTES // 2**20} MB the fixer rewrites "
            "in bounded time; left as it was")


def _rewrite(source: bytes, module: cst.Module, edits: Sequence[Edit]) -> Rewrite:
    module, parts = _transform(module, edits, module)
    edit_spans = {e: list(spans) for part in parts for e, spans in part.spans.items()}
    edit_imports = {e: frozenset(names) for part in parts for e, names in part.imports.items()}
    module = _finish(module, parts, edit_spans, edit_imports, lambda line: line)
    return Rewrite(source, module.bytes, _spans(edit_spans), {e: tuple(s) for e, s in edit_spans.items()}, edit_imports)


def _in_pieces(source: bytes, edits: Sequence[Edit]) -> Rewrite | None:
    """The rewrite made piece by piece, or None where the file cannot be cut or a piece fails."""
    try:
        found = pieces.cut(source, edits, lambda edit: TRANSFORMERS[type(edit)].reach)
        return None if found is None else _rewrite_pieces(source, found)
    except Exception:  # the whole file is rewritten instead, and reports its own error
        return None


def _rewrite_pieces(source: bytes, found: pieces.Cut) -> Rewrite | None:
    """Each piece rewritten alone; the outline, which libcst reads only for a kind that reads
    the top level or for the imports the edits need, gets the last steps."""
    kinds = _parts([e for piece in found.pieces for e in piece.originals])
    outline = _outline(found) if any(type(p).prepare is not EditTransformer.prepare for p in kinds) else None
    indent = found.indent()
    rewritten: dict[int, tuple[int, bytes]] = {}
    edit_spans: dict[Edit, list[tuple[int, int]]] = {}
    edit_imports: dict[Edit, frozenset[tuple[str, str]]] = {}
    for piece in found.pieces:
        parsed = roundtrip.parse(piece.text)
        module = parsed.module
        if parsed.cut or module.default_indent != indent or module.encoding != "utf-8":
            return None  # libcst would lay new code out otherwise alone than in the whole file
        module, parts = _transform(module, piece.edits, outline)
        text = module.bytes
        if not (text.startswith(piece.head) and text.endswith(piece.tail)):
            return None
        rewritten[piece.first] = (piece.last, text[len(piece.head):len(text) - len(piece.tail)])
        back = dict(zip(piece.edits, piece.originals, strict=True))
        for part in parts:
            edit_spans.update({back[e]: [(a + piece.shift, b + piece.shift) for a, b in s] for e, s in part.spans.items()})
            edit_imports.update({back[e]: frozenset(names) for e, names in part.imports.items()})
    finals = _parts(list(edit_spans))
    for part in finals:
        part.applied = set(part.edits)
    top = found.outline
    if any(edit_imports.values()) or any(type(p).finish is not EditTransformer.finish for p in finals):
        outline = outline or _outline(found)
        if outline is None:
            return None
        top = _finish(outline, finals, edit_spans, edit_imports, found.line_of).bytes
    after = found.joined(top, rewritten, source)
    return Rewrite(source, after, _spans(edit_spans), {e: tuple(s) for e, s in edit_spans.items()}, edit_imports)


def _outline(found: pieces.Cut) -> cst.Module | None:
    parsed = roundtrip.parse(found.outline)
    layout = (parsed.module.default_indent, parsed.module.encoding)
    return None if parsed.cut or layout != (found.indent(), "utf-8") else parsed.module


def _parts(edits: Sequence[Edit]) -> list[EditTransformer]:
    groups: dict[type[Edit], list[Edit]] = {}
    for edit in edits:
        groups.setdefault(type(edit), []).append(edit)
    return [TRANSFORMERS[kind](group) for kind, group in groups.items()]


def _transform(module: cst.Module, edits: Sequence[Edit], top: cst.Module | None
               ) -> tuple[cst.Module, list[EditTransformer]]:
    """`module` (as parsed: no node in it twice, so libcst need not copy it before it records
    positions) with `edits` applied, and the transformers that applied them; `top` is the module
    whose top level they read (the whole file, or its outline; None where no kind reads it)."""
    parts = _parts(edits)
    for part in parts:
        if top is not None:
            part.prepare(top)
    module = cst.MetadataWrapper(module, unsafe_skip_copy=True).visit(_Together(parts))
    applied = {edit for part in parts for edit in part.applied}
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        if edit not in applied:
            raise FixError(f"could not locate the code to edit at line {edit.line} ({type(edit).__name__})")
    return module, parts


def _finish(module: cst.Module, parts: list[EditTransformer], edit_spans: dict, edit_imports: dict,
            line_of: Callable[[int], int]) -> cst.Module:
    """Each kind's last step and the imports the edits need, on the module's top level; the
    lines the steps touched (through `line_of`, to the file's) join their edits' spans."""
    for part in sorted(parts, key=lambda p: type(p).__name__):
        module, touched = part.finish(module)
        for edit in part.applied:
            edit_spans[edit].extend((line_of(a), line_of(b)) for a, b in touched)
    return add_imports(module, set().union(*edit_imports.values()))


def _spans(edit_spans: dict) -> tuple[tuple[int, int], ...]:
    return tuple(span for e in sorted(edit_spans, key=lambda e: (e.line, e.column), reverse=True) for span in edit_spans[e])


class _Together(cst.CSTTransformer):
    """Runs several transformers as one visit: each sees every node, with the positions of the
    original tree, and each `leave_` gets the node as the previous ones left it."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, parts: list[EditTransformer]) -> None:
        super().__init__()
        self.parts = parts

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            for part in self.parts:
                part.metadata = self.metadata
        for part in self.parts:
            part.on_visit(node)
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        result: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel = updated
        for part in self.parts:
            if isinstance(result, cst.CSTNode):
                result = part.on_leave(original, result)
        return result


def verify_syntax(result: Rewrite, path: Path) -> None:
    """The new text compiles (from the text: twice as fast as through `ast.parse`'s tree)."""
    try:
        compile(result.after, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError) as error:
        raise FixError(f"the fixed file does not compile: {error}") from None


def verify_scope(result: Rewrite) -> None:
    """Every changed line lies in an edited span; a changed line ends as the lines it replaces
    or as most lines of the file do. Any one diff that shows this proves it: the quick one is
    tried first, and `linediff.opcodes`, which says what is wrong where neither shows it."""
    old = result.before.splitlines(keepends=True)
    new = result.after.splitlines(keepends=True)
    newline = roundtrip.newline(result.before)
    problem = _out_of_scope(result, old, new, newline, linediff.anchored(old, new))
    if problem:
        problem = _out_of_scope(result, old, new, newline, linediff.opcodes(old, new))
    if problem:
        raise FixError(problem)


def _out_of_scope(result: Rewrite, old: list[bytes], new: list[bytes], newline: bytes,
                  opcodes: Sequence[linediff.Opcode]) -> str:
    """What `opcodes` (from `old` to `new`) show the rewrite changing that it must not ("": nothing)."""
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        only_imports = tag == "insert" and all(line.lstrip().startswith((b"from ", b"import ")) for line in new[j1:j2])
        if not (_inside(result.spans, i1, i2, old) or only_imports):
            return f"the fix changed lines {i1 + 1}-{i2} outside the code it meant to edit"
        kept = {newline, b"", *(roundtrip.ending(line) for line in old[i1:i2])}
        if any(roundtrip.ending(line) not in kept for line in new[j1:j2]):
            return "the fix would change the file's line endings"
    return ""


def _inside(spans: Sequence[tuple[int, int]], first: int, last: int, old: Sequence[bytes | str]) -> bool:
    """Whether old lines `first` up to `last` (0-based; equal for an insertion before `first`)
    lie in the spans (1-based, inclusive)."""
    if first == last:
        at = _above_blanks(old, first)  # an insertion after blank lines is the same insertion before them
        return any(start - 1 <= k <= end for start, end in spans for k in (first, at))
    return all(any(start - 1 <= k < end for start, end in spans) for k in range(first, last))


def _above_blanks(old: Sequence[bytes | str], first: int) -> int:
    """The first of the blank lines right above old line `first` (0-based), or `first`."""
    while first > 0 and not old[first - 1].strip():
        first -= 1
    return first


def shares(result: Rewrite, path: Path, findings: Sequence[Finding]) -> dict[Finding, tuple[Replacement, ...]]:
    """Each finding's own text replacements in a verified rewrite: the changed blocks inside its
    edits' spans, and the added import lines its edits need. A file fixed for one finding gives
    it the whole change."""
    before, after = _text(result.before), _text(result.after)
    found = hunks(before, after)
    if len(findings) == 1:
        return {findings[0]: tuple(h.replacement for h in found)} if found else {}
    old = lines(before)
    own = {f: [e for e in f.fix.edits if e.path == path] if f.fix else [] for f in findings}
    spans = {f: [s for e in own[f] for s in result.edit_spans.get(e, ())] for f in findings}
    imports = {f: {i for e in own[f] for i in result.edit_imports.get(e, ())} for f in findings}
    out: dict[Finding, list[Replacement]] = {f: [] for f in findings}
    near: dict[int, set[int]] = {}  # line -> the findings a span of which can hold a change there
    for number, f in enumerate(findings):
        for start, end in spans[f]:
            for k in range(max(start - 1, 0), end + 1):
                near.setdefault(k, set()).add(number)
    for hunk in found:
        nearby = near.get(hunk.first, set()) | near.get(_above_blanks(old, hunk.first), set())
        claimed = [findings[n] for n in sorted(nearby) if _inside(spans[findings[n]], hunk.first, hunk.last, old)]
        if claimed or not hunk.inserted:
            for f in claimed:
                out[f].append(hunk.replacement)
            continue
        at = hunk.replacement.start
        for line in hunk.inserted:
            for f in findings:
                if any(_imports(line, module, name) for module, name in imports[f]):
                    _insert(out[f], Replacement(at, at, line))
    return {f: tuple(r) for f, r in out.items() if r}


def _imports(line: str, module: str, name: str) -> bool:
    words = line.replace(",", " ").split()
    return words[:2] == ["from", module] and name in words[3:]


def _insert(found: list[Replacement], new: Replacement) -> None:
    """Lines inserted at one place are one replacement."""
    if found and found[-1].start == found[-1].end == new.start:
        found[-1] = Replacement(new.start, new.end, found[-1].text + new.text)
    else:
        found.append(new)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def then(first: Rewrite, second: Rewrite) -> Rewrite:
    """`first` followed by `second` (a rewrite of `first.after`) as one rewrite of `first.before`,
    with the spans of `second` moved back to the lines of `first.before` they came from."""
    old = first.before.splitlines(keepends=True)
    new = first.after.splitlines(keepends=True)
    opcodes = linediff.opcodes(old, new)

    def back(line: int, end: bool) -> int:
        for tag, i1, i2, j1, j2 in opcodes:
            if j1 <= line - 1 < j2 or (tag != "equal" and j1 == j2 == line - 1):
                if tag == "equal":
                    return i1 + line - j1
                return max(i2 if end else i1 + 1, 1) if i2 > i1 else max(i1, 1)
        return max(len(old), 1)

    def moved(spans):
        return tuple((back(a, False), back(b, True)) for a, b in spans)

    return Rewrite(
        first.before,
        second.after,
        first.spans + moved(second.spans),
        {**first.edit_spans, **{e: moved(s) for e, s in second.edit_spans.items()}},
        {**first.edit_imports, **second.edit_imports},
    )


def write_atomic(path: Path, result: Rewrite) -> None:
    """Replace `path` with the fixed bytes: temp file beside it, fsync, rename, fsync the folder.

    Readers and crashes see the old file or the new one, never a mix. Refuses symbolic links,
    read-only files, files with other hard links and files that changed since they were analyzed
    (compared again right before the rename); keeps the mode, the extended attributes and, where
    allowed, the owner. The temp name fits NAME_MAX whatever the file's name.
    """
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise FixError("is a symbolic link (fix the file it points to)")
    if not stat.S_ISREG(info.st_mode):
        raise FixError("is not a regular file")
    if not info.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise FixError("is read-only")
    if info.st_nlink > 1:
        raise FixError("has other hard links (replacing it would split them)")
    _check_unchanged(path, result.before)
    _remove_stale_temps(path)
    fd, temp = tempfile.mkstemp(prefix=f"{_temp_prefix(path)}{os.getpid()}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(result.after)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, stat.S_IMODE(info.st_mode))
        _copy_xattrs(path, temp)
        if (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
            with contextlib.suppress(PermissionError):
                os.chown(temp, info.st_uid, info.st_gid)
        _check_unchanged(path, result.before)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _temp_prefix(path: Path) -> str:
    """`.<name>.`, or `.<hash of the name>.` when a temp name built on the name would pass NAME_MAX."""
    prefix = f".{path.name}."
    if len(os.fsencode(prefix)) + 40 + len(TEMP_SUFFIX) <= 255:
        return prefix
    return f".{hashlib.sha256(os.fsencode(path.name)).hexdigest()[:16]}."


def _copy_xattrs(source: Path, target: str) -> None:
    """The extended attributes of `source` onto `target` (those this process may set)."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(source, follow_symlinks=False)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.setxattr(target, name, os.getxattr(source, name, follow_symlinks=False))


def _remove_stale_temps(path: Path) -> None:
    """Delete temp files of `path` left by a contractfix process that died mid-write (named
    `.<name>.<pid>.<random>.contractfix`; only those whose process is gone)."""
    prefix = _temp_prefix(path)
    for temp in path.parent.glob(f"{glob.escape(prefix)}*{TEMP_SUFFIX}"):
        pid = temp.name[len(prefix):].partition(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                temp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _check_unchanged(path: Path, before: bytes) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or handle.read() != before:
            raise FixError("changed on disk since it was analyzed")


def edits_of(findings: list[Finding]) -> dict[Path, list[Edit]]:
    by_path: dict[Path, dict[Edit, None]] = {}
    for finding in findings:
        for edit in finding.fix.edits if finding.fix else ():
            by_path.setdefault(edit.path, {})[edit] = None
    return {path: list(edits) for path, edits in by_path.items()}
