"""Find the Python files a run looks at, and skip cheaply those that cannot matter."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

from .findings import FileError

MARKERS = (b"intermediate_tensors", b"IntermediateTensors", b"SupportsPP")
SKIP_DIRS = {"__pycache__", ".git", ".hg", ".venv", "venv", ".tox", "node_modules", ".mypy_cache"}


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)


def discover(paths: list[Path], exclude: tuple[str, ...] = ()) -> Discovery:
    """Every `.py` file under `paths` (not following directory links), minus `exclude` globs."""
    found = Discovery()
    seen: set[Path] = set()
    for path in paths:
        if not path.exists() and not path.is_symlink():
            found.errors.append(FileError(path, "no such file or directory"))
            continue
        if path.is_file() or path.is_symlink() and not path.is_dir():
            candidates = [path]
        elif path.is_dir():
            candidates = list(_walk(path))
            if not candidates:
                found.errors.append(FileError(path, "no Python files found"))
        else:
            found.errors.append(FileError(path, "not a regular file or directory"))
            continue
        for file in candidates:
            key = file.absolute()
            if key in seen or _excluded(file, exclude):
                continue
            seen.add(key)
            found.files.append(file)
    return found


def _walk(root: Path):
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


def _excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    text = path.as_posix()
    return any(fnmatch.fnmatch(text, p) or fnmatch.fnmatch(text, f"*/{p}") for p in patterns)


def relevant(source: bytes) -> bool:
    """Whether a file can take part in the contract at all (a byte search, no parsing)."""
    return any(marker in source for marker in MARKERS)
