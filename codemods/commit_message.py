"""Commit messages of a sweep: a summary line, the fixes by file, what is left, and our trailer."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable

from . import __version__
from .findings import Finding

TRAILER = "Generated-by"
TOOL = "contractfix"
WIDTH = 72


def trailer() -> str:
    return f"{TRAILER}: {TOOL} {__version__}"


def is_ours(message: str) -> bool:
    """Whether a commit message ends with our trailer (in its last paragraph)."""
    last = message.strip().split("\n\n")[-1]
    return any(m.group(1).split()[:1] == [TOOL] for m in re.finditer(rf"^{TRAILER}:\s*(.*)$", last, re.M | re.I))


def title(fixed: list[Finding]) -> str:
    codes = ", ".join(sorted({f.rule for f in fixed}))
    plural = "" if len(fixed) == 1 else "s"
    return f"Fix {len(fixed)} pipeline-parallel contract violation{plural} ({codes})"


def message(fixed: list[Finding], left: list[Finding]) -> str:
    """The whole message; deterministic, so an unchanged re-run produces the same text."""
    parts = [title(fixed), _section("Fixed:", _by_file(fixed))]
    if left:
        parts.append(_section("Left for review:", _by_file(left)))
    parts.append(trailer())
    return "\n\n".join(parts) + "\n"


def _by_file(findings: Iterable[Finding]) -> list[str]:
    lines: list[str] = []
    current = None
    for f in sorted(findings, key=lambda f: f.sort_key):
        if f.path != current:
            current = f.path
            lines.append(f.path.as_posix())
        lines.extend(_wrap(f"- {f.rule} {f.cls} (line {f.line}): {f.message}"))
    return lines


def _section(heading: str, lines: list[str]) -> str:
    return "\n".join([heading, *lines])


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
