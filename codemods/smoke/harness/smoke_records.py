"""Check records: their one definition (the host imports it from here; the harness runs under
vLLM's Python, without contractfix), and writing them as JSON lines, one flushed line per record,
so a killed run keeps its results."""

from __future__ import annotations

import json
import os
import traceback
from dataclasses import asdict, dataclass, field, fields
from enum import Enum


class Status(str, Enum):
    """`skip`: a check that should have run and did not (it fails a run without --allow-skip);
    `n/a`: one that does not apply (vLLM itself cannot build the architecture from its config
    class, a file git does not track has no base): it never fails a run."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    NA = "n/a"


@dataclass
class CheckRecord:
    """The outcome of one check.

    `arch` is empty for file-level checks (the static tier); `path` is the changed file (None
    when the installed module ran); `pp` is the PP size the check ran at; `error` is an excerpt
    of what went wrong (`trace`: the whole traceback it came from, for the JSON report); `keys` the
    intermediate-tensor keys the check saw, by role.
    """

    arch: str
    tier: str
    check: str
    status: Status
    reason: str = ""
    duration_s: float = 0.0
    error: str = ""
    keys: dict[str, list[str]] = field(default_factory=dict)
    pp: int | None = None
    path: str | None = None
    device: str | None = None
    notes: list[str] = field(default_factory=list)
    trace: str = ""

    def to_json(self) -> dict:
        data = asdict(self)
        data["status"] = self.status.value
        data["duration_s"] = round(self.duration_s, 3)
        return data

    @classmethod
    def from_json(cls, data: dict) -> CheckRecord:
        """A record from its JSON form (as the harness writes it); unknown fields are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown record fields: {sorted(unknown)}")
        return cls(**{**data, "status": Status(data["status"])})

    @property
    def label(self) -> str:
        where = self.arch or self.path or "?"
        pp = f" PP={self.pp}" if self.pp else ""
        return f"{self.tier:8} {where}{pp} {self.check}"


class Emitter:
    """Records for one target share `arch`, `tier`, `path` and `device`; each call adds one line."""

    def __init__(self, results: str, **common) -> None:
        self.results = results
        self.common = common

    def __call__(self, check: str, status: str, *, pp: int | None = None, reason: str = "",
                 duration_s: float = 0.0, error: str = "", keys: dict | None = None,
                 notes: list[str] | None = None, trace: str = "") -> None:
        record = CheckRecord(**self.common, check=check, status=Status(status), pp=pp, reason=reason,
                             duration_s=duration_s, error=error, keys=keys or {}, notes=notes or [], trace=trace)
        with open(self.results, "a") as handle:
            handle.write(json.dumps(record.to_json()) + "\n")


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
