"""Write check records as JSON lines, one flushed line per record, so a killed run keeps its results."""

from __future__ import annotations

import json
import traceback


class Emitter:
    """Records for one target share `arch`, `tier`, `path` and `device`; each call adds one line."""

    def __init__(self, path: str, **common) -> None:
        self.path = path
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
        with open(self.path, "a") as handle:
            handle.write(json.dumps(record) + "\n")


def excerpt(step: str, exc: BaseException) -> str:
    """`step: Type: message`, and the innermost source line of the traceback."""
    text = f"{step}: {type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f"\n  at {last.filename}:{last.lineno} in {last.name}: {(last.line or '').strip()}"
    return text
