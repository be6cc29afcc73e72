"""Smoke results as data: one record per (architecture, tier, check, PP size), and the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import Enum


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


@dataclass
class CheckRecord:
    """The outcome of one check.

    `arch` is empty for file-level checks (the static tier); `path` is the changed file (None
    when the installed module ran); `pp` is the PP size the check ran at; `error` is an excerpt
    of what went wrong; `keys` the intermediate-tensor keys the check saw, by role.
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


@dataclass
class SmokeReport:
    """All records of one smoke run, and why tiers above the ones run were not run."""

    records: list[CheckRecord] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)
    not_run: dict[str, str] = field(default_factory=dict)
    environment: dict[str, object] = field(default_factory=dict)
    allow_skip: bool = False
    duration_s: float = 0.0

    def by_status(self, status: Status) -> list[CheckRecord]:
        return [r for r in self.records if r.status is status]

    @property
    def ok(self) -> bool:
        """No check failed, at least one ran, and nothing was skipped unless skips are allowed."""
        if self.by_status(Status.FAIL) or not self.records:
            return False
        return self.allow_skip or not self.by_status(Status.SKIP)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "tiers": self.tiers,
            "not_run": self.not_run,
            "environment": self.environment,
            "allow_skip": self.allow_skip,
            "duration_s": round(self.duration_s, 2),
            "counts": {s.value: len(self.by_status(s)) for s in Status},
            "records": [r.to_json() for r in self.records],
        }

    def summary(self) -> str:
        """Human text: one line per record, details under failures and skips, then a verdict."""
        lines = []
        for record in self.records:
            detail = "\n".join(filter(None, [record.reason, record.error])) if record.status is not Status.PASS else ""
            lines.append(f"{record.status.value.upper():4}  {record.label}  ({record.duration_s:.1f}s)")
            lines.extend(f"      {_clip(text)}" for text in detail.splitlines()[:6])
            if record.status is Status.PASS:
                lines.extend(f"      note: {note}" for note in record.notes)
        for tier, reason in self.not_run.items():
            lines.append(f"tier {tier} not run: {reason}")
        counts = ", ".join(f"{len(self.by_status(s))} {s.value}" for s in Status)
        verdict = "OK" if self.ok else "FAILED"
        if not self.ok and not self.by_status(Status.FAIL) and self.records:
            verdict += " (skips need --allow-skip)"
        lines.append(f"smoke {verdict}: {counts} in {self.duration_s:.1f}s (tiers: {', '.join(self.tiers) or '-'})")
        return "\n".join(lines)


def _clip(text: str, width: int = 240) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
