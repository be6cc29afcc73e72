"""`check --add-noqa`: write `# contractfix: ignore[CODE]` on the line of every remaining finding,
so a big tree can adopt contractfix before all of it is fixed (ruff's `--add-noqa`).

Only the lines that get a comment change, byte for byte; a line whose end lies inside a string or
after a backslash cannot take a comment and is reported instead. Writes are atomic."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from .analysis.module import SUPPRESSION, _suppressions
from .apply import FixError, Rewrite, write_atomic
from .findings import FileError, Finding

SKIPPED = {"PP100"}
LINE_END = re.compile(r"(\r\n|\r|\n)")
LINE_END_BYTES = re.compile(rb"(\r\n|\r|\n)")


def add(findings: list[Finding]) -> tuple[int, list[FileError]]:
    """Annotate the lines of `findings`; return (comments written or extended, errors)."""
    wanted: dict[Path, dict[int, set[str]]] = {}
    for finding in findings:
        if finding.rule not in SKIPPED:
            wanted.setdefault(Path(finding.path), {}).setdefault(finding.line, set()).add(finding.rule)
    count, errors = 0, []
    for path, lines in sorted(wanted.items()):
        try:
            before = path.read_bytes()
            after = annotate(before, lines)
            if after != before:
                write_atomic(path, Rewrite(before, after, ()))
        except (FixError, OSError, SyntaxError, UnicodeError, ValueError) as error:
            errors.append(FileError(path, f"suppression not added: {getattr(error, 'strerror', None) or error}"))
            continue
        count += len(lines)
    return count, errors


def annotate(source: bytes, wanted: dict[int, set[str]]) -> bytes:
    """`source` with `wanted` codes suppressed on their lines (an existing suppression comment on
    the line is extended). Raises ValueError for a line that cannot take a comment."""
    encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    text = source.decode(encoding)
    tokens = list(tokenize.generate_tokens(io.StringIO(text, newline=None).readline))
    ends = {t.start[0]: t.start[1] for t in tokens if t.type in (tokenize.NEWLINE, tokenize.NL)}
    comments = {t.start[0]: t for t in tokens if t.type == tokenize.COMMENT}
    bom = b"\xef\xbb\xbf" if encoding == "utf-8-sig" else b""
    body = source[len(bom):]
    codec = "utf-8" if bom else encoding
    raw = LINE_END.split(body.decode(codec))
    chunks = LINE_END_BYTES.split(body)
    if len(raw) != len(chunks):
        raise ValueError("line endings could not be matched")
    for number, codes in sorted(wanted.items()):
        index = 2 * (number - 1)
        if number not in ends or index >= len(raw):
            raise ValueError(f"line {number} ends inside a string or a continued line")
        raw[index] = _with_codes(raw[index], codes, comments.get(number), ends[number])
        chunks[index] = raw[index].encode(codec)
    after = bom + b"".join(chunks)
    ast.parse(after)
    found = _suppressions(after.decode(encoding))
    if any(not codes <= set(found.get(number, ())) for number, codes in wanted.items()):
        raise ValueError("the written suppression would not be read back")
    return after


def _with_codes(line: str, codes: set[str], comment: tokenize.TokenInfo | None, end: int) -> str:
    if comment is not None:
        match = SUPPRESSION.search(comment.string)
        if match:
            have = [c.strip().upper() for c in match.group(1).split(",") if c.strip()]
            merged = ", ".join([*have, *sorted(codes - set(have))])
            start = comment.start[1] + match.start(1)
            return line[:start] + merged + line[comment.start[1] + match.end(1):]
    suffix = f"  # contractfix: ignore[{', '.join(sorted(codes))}]"
    return line[:end] + suffix + line[end:]
