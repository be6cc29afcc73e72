"""Renderers of a `Report`: each turns the same findings into one output format."""

from __future__ import annotations

import os
from pathlib import Path


def relative(path: Path | str, cwd: Path | None = None) -> str:
    """`relative_path` as text any output can hold: bytes of a name that are not UTF-8 are shown
    as `\\xNN`."""
    return relative_path(path, cwd).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def relative_path(path: Path | str, cwd: Path | None = None) -> str:
    """`path` relative to the current directory when it lies under it, else absolute."""
    cwd = (cwd or Path.cwd()).resolve()
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(cwd).as_posix()
    except ValueError:
        return absolute.as_posix()


def repository_root(start: Path | None = None) -> Path:
    """The nearest directory from `start` (default: the current one) up that holds `.git` (a
    directory, or a file in worktrees and submodules), else `start`. GitHub resolves annotation
    and SARIF paths against the repository root, wherever in it contractfix ran."""
    start = (start or Path.cwd()).resolve()
    return next((d for d in (start, *start.parents) if (d / ".git").exists()), start)


def fixable_counts(findings) -> tuple[int, int]:
    """(findings with a safe fix, findings with an unsafe fix): every format reports these two."""
    from ..findings import Applicability

    kinds = [f.fix.applicability for f in findings if f.fix]
    return kinds.count(Applicability.SAFE), kinds.count(Applicability.UNSAFE)


def relative_text(line: str, cwd: Path | None = None) -> str:
    """A message that names paths, with the current directory's prefix dropped from them."""
    prefix = (cwd or Path.cwd()).resolve().as_posix() + "/"
    return line.replace(prefix, "")


def warning_count(findings) -> int:
    """Findings of level "warning": every format counts them apart."""
    return sum(1 for f in findings if f.level == "warning")


def level_counts(findings) -> str:
    """"E error(s), W warning(s)": how the summaries count findings by level."""
    warnings = warning_count(findings)
    return f"{len(findings) - warnings} error(s), {warnings} warning(s)"
