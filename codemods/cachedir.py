"""Where contractfix keeps what it reuses between runs (facts, memos, check results): outside
any source tree, like ruff's cache. A module of its own, so that a reused check finds it without
importing the facts."""

from __future__ import annotations

import os
import pickle
import stat
import tempfile
from pathlib import Path

ENV = "CONTRACTFIX_CACHE_DIR"


def default_folder() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "contractfix" / "facts"


def load(path: Path) -> object:
    """The object pickled at `path`; None where there is none, where it is a link or not a
    regular file (a FIFO or device planted in the cache must never block the run), or where it
    cannot be read back."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return pickle.load(handle) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None


def store(folder: Path, name: str, data: bytes) -> None:
    """Write `data` as `folder/name` atomically (a temporary file replaced into place, removed
    again where the write fails). Raises OSError where it cannot, and where `folder` is a link or
    not a folder: a planted link is never written through."""
    folder.mkdir(parents=True, exist_ok=True)
    if not stat.S_ISDIR(folder.lstat().st_mode):
        raise NotADirectoryError(folder)
    fd, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, folder / name)
    except OSError:
        os.unlink(temp)  # a full disk: no half-written entry left behind
        raise
