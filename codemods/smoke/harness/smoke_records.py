"""Write check records as JSON lines, one flushed line per record, so a killed run keeps its results."""

from __future__ import annotations

import json
import os
import traceback


class Emitter:
    """Records for one target share `arch`, `tier`, `path` and `device`; each call adds one line."""

    def __init__(self, results: str, **common) -> None:
        self.results = results
        self.common = common

    def __call__(self, check: str, status: str, *, pp: int | None = None, reason: str = "",
                 duration_s: float = 0.0, error: str = "", keys: dict | None = None,
                 notes: list[str] | None = None) -> None:
        record = {
            **self.common,
            "check": check,
            "status": status,
            "pp": pp,
            "reason": reason,
            "duration_s": round(duration_s, 3),
            "error": error,
            "keys": keys or {},
            "notes": notes or [],
        }
        with open(self.results, "a") as handle:
            handle.write(json.dumps(record) + "\n")


def excerpt(step: str, exc: BaseException, source: str | None = None) -> str:
    """`step: Type: message`, where it was raised, and the line of `source` (the changed file) it
    went through last, when that is not the same frame."""
    text = f"{step}: {type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return text
    own = [f for f in frames if source and os.path.realpath(f.filename) == os.path.realpath(source)]
    for frame in ([own[-1]] if own else []) + ([frames[-1]] if not own or own[-1] is not frames[-1] else []):
        text += f"\n  at {frame.filename}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"
    return text
