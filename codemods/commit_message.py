"""Commit messages of a sweep: a summary line, the fixes by file, what is left, and our trailers.

The last trailer records what the sweep wrote: a digest of the commit's tree, its parent and the rest
of its message. A commit is the sweep's own only while all three still match, so a person's amend
(even `--no-edit`, which keeps the trailers), reword or rebase makes it theirs."""

from __future__ import annotations

import hashlib
import re
import textwrap
from collections.abc import Iterable

from . import __version__
from .families import FAMILIES, Family, family_of
from .findings import Finding

TRAILER = "Generated-by"
RECORD = "Contractfix-Record"
TOOL = "contractfix"
WIDTH = 72


def trailer() -> str:
    return f"{TRAILER}: {TOOL} {__version__}"


def sign(message: str, tree: str, parent: str) -> str:
    """`message` with the record of the commit the sweep is about to write (tree `tree` on `parent`)."""
    body = message.rstrip("\n")
    return f"{body}\n{RECORD}: {_digest(body, tree, parent)}\n"


def unsigned(message: str) -> str:
    """`message` without its record (which changes with the parent's sha, so with the commit time)."""
    return message.rstrip("\n").rpartition(f"\n{RECORD}: ")[0] or message.rstrip("\n")


def is_ours(message: str, tree: str, parent: str | None) -> bool:
    """Whether the sweep wrote this commit as it is: our trailer, and a record that matches the
    commit's tree, parent and message."""
    body, _, record = message.rstrip("\n").rpartition(f"\n{RECORD}: ")
    if not parent or record != _digest(body, tree, parent):
        return False
    last = body.strip().split("\n\n")[-1]
    return any(m.group(1).split()[:1] == [TOOL] for m in re.finditer(rf"^{TRAILER}:\s*(.*)$", last, re.M | re.I))


def _digest(body: str, tree: str, parent: str) -> str:
    return hashlib.sha256(f"tree {tree}\nparent {parent}\n\n{body}".encode()).hexdigest()[:40]


def title(fixed: list[Finding]) -> str:
    """Names the contract when one family's fixes are all there is; the codes say which otherwise."""
    codes = ", ".join(sorted({f.rule for f in fixed}))
    plural = "" if len(fixed) == 1 else "s"
    families = by_family(fixed)
    contract = f"{families[0][0].contract} " if len(families) == 1 else ""
    return f"Fix {len(fixed)} {contract}contract violation{plural} ({codes})"


def by_family(findings: Iterable[Finding]) -> list[tuple[Family, list[Finding]]]:
    """The findings of each family, in the order of `FAMILIES`."""
    found = list(findings)
    groups = [(family, [f for f in found if family_of(f.rule) is family]) for family in FAMILIES]
    return [(family, mine) for family, mine in groups if mine]


def message(fixed: list[Finding], left: list[Finding]) -> str:
    """The whole message; deterministic, so an unchanged re-run produces the same text. Fixes of
    several families come in a section each, so a reviewer reads one contract at a time."""
    parts = [title(fixed), *_sections("Fixed", fixed)]
    if left:
        parts += _sections("Left for review", left)
    parts.append(trailer())
    return "\n\n".join(parts) + "\n"


def _sections(heading: str, findings: list[Finding]) -> list[str]:
    families = by_family(findings)
    if len(families) == 1:
        return [_section(f"{heading}:", _by_file(findings))]
    return [_section(f"{heading}, {family.title} ({family.prefix}):", _by_file(mine)) for family, mine in families]


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
