"""Renderers of a `Report`: each turns the same findings into one output format."""

from __future__ import annotations

import os
from pathlib import Path


def relative(path: Path | str, cwd: Path | None = None) -> str:
    """`path` relative to the current directory when it lies under it, else absolute."""
    cwd = (cwd or Path.cwd()).resolve()
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(cwd).as_posix()
    except ValueError:
        return absolute.as_posix()
