"""Snapshot files: reviewed expected output, compared verbatim, refreshed with --snapshot-update."""

from __future__ import annotations

import difflib
from pathlib import Path


def assert_snapshot(path: Path, actual: str, update: bool) -> None:
    if update or not path.exists():
        if not update:
            raise AssertionError(f"missing snapshot {path}; run pytest --snapshot-update and review it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    if expected != actual:
        delta = "".join(difflib.unified_diff(
            expected.splitlines(True), actual.splitlines(True), "snapshot", "actual"
        ))
        raise AssertionError(f"{path} differs (pytest --snapshot-update to accept):\n{delta}")
