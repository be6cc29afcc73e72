"""Apply fix plans to source bytes with libcst, verify the result, and write it atomically."""

from __future__ import annotations

import ast
import contextlib
import difflib
import glob
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import PositionProvider

from .edits import Edit
from .findings import Finding
from .fixes import TRANSFORMERS
from .fixes.base import EditTransformer

TEMP_SUFFIX = ".contractfix"


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
    by their positions in `source`, so edits never shift one another."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        raise FixError(f"libcst cannot parse the file: {error.message}") from None
    except (SyntaxError, UnicodeError, RecursionError) as error:
        raise FixError(f"libcst cannot parse the file: {error}") from None
    groups: dict[type[Edit], list[Edit]] = {}
    for edit in edits:
        groups.setdefault(type(edit), []).append(edit)
    parts = [TRANSFORMERS[kind](group) for kind, group in groups.items()]
    module = cst.MetadataWrapper(module).visit(_Together(parts))
    applied = {edit for part in parts for edit in part.applied}
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        if edit not in applied:
            raise FixError(f"could not locate the code to edit at line {edit.line} ({type(edit).__name__})")
    edit_spans = {e: list(spans) for part in parts for e, spans in part.spans.items()}
    for part in sorted(parts, key=lambda p: type(p).__name__):
        module, touched = type(part).finish(module)
        for edit in part.applied:
            edit_spans[edit].extend(touched)
    edit_imports = {e: frozenset(names) for part in parts for e, names in part.imports.items()}
    imports = set().union(*edit_imports.values())
    if imports:
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

        context = CodemodContext()
        for module_name, name in sorted(imports):
            AddImportsVisitor.add_needed_import(context, module_name, name)
        module = AddImportsVisitor(context).transform_module(module)
    spans = tuple(span for e in sorted(edit_spans, key=lambda e: (e.line, e.column), reverse=True) for span in edit_spans[e])
    return Rewrite(source, module.bytes, spans, {e: tuple(s) for e, s in edit_spans.items()}, edit_imports)


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
    try:
        compile(ast.parse(result.after, filename=str(path)), str(path), "exec")
    except (SyntaxError, ValueError, RecursionError) as error:
        raise FixError(f"the fixed file does not compile: {error}") from None


def verify_scope(result: Rewrite) -> None:
    """Every changed line lies in an edited span; added lines keep the file's line endings."""
    old = result.before.splitlines(keepends=True)
    new = result.after.splitlines(keepends=True)
    newline = b"\r\n" if result.before.count(b"\r\n") * 2 > result.before.count(b"\n") else b"\n"
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:
            at = i1
            while at > 0 and not old[at - 1].strip():
                at -= 1  # an insertion after blank lines is the same insertion before them
            inside = any(start - 1 <= k <= end for start, end in result.spans for k in (i1, at))
        else:
            inside = all(any(start - 1 <= k < end for start, end in result.spans) for k in range(i1, i2))
        only_imports = tag == "insert" and all(line.lstrip().startswith((b"from ", b"import ")) for line in new[j1:j2])
        if not (inside or only_imports):
            raise FixError(f"the fix changed lines {i1 + 1}-{i2} outside the code it meant to edit")
        for line in new[j1:j2]:
            if line.endswith(b"\n") and not line.endswith(newline) and newline == b"\r\n":
                raise FixError("the fix would change the file's line endings")




def write_atomic(path: Path, result: Rewrite) -> None:
    """Replace `path` with the fixed bytes: temp file beside it, fsync, rename, fsync the folder.

    Readers and crashes see the old file or the new one, never a mix. Refuses symbolic links,
    read-only files, files with other hard links and files that changed since they were analyzed
    (compared again right before the rename); keeps the mode and, where allowed, the owner.
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
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(result.after)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, stat.S_IMODE(info.st_mode))
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


def _remove_stale_temps(path: Path) -> None:
    """Delete temp files of `path` left by a contractfix process that died mid-write (named
    `.<name>.<pid>.<random>.contractfix`; only those whose process is gone)."""
    prefix = f".{path.name}."
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
    by_path: dict[Path, list[Edit]] = {}
    for finding in findings:
        for edit in finding.fix.edits:
            if edit not in by_path.setdefault(edit.path, []):
                by_path[edit.path].append(edit)
    return by_path
