"""Where contractfix keeps what it reuses between runs (facts, memos, check results): outside
any source tree, like ruff's cache. A module of its own, so that a reused check finds it without
importing the facts."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "CONTRACTFIX_CACHE_DIR"


def default_folder() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "contractfix" / "facts"
