"""Smoke results as data: one record per (architecture, tier, check, PP size), and the report.

A record's format is defined once, beside the harness that writes it (`harness/smoke_records.py`,
importable under vLLM's Python without contractfix)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .harness.smoke_records import CheckRecord, Status

__all__ = ["CheckRecord", "SmokeReport", "Status"]


@dataclass
class SmokeReport:
    """All records of one smoke run, and why tiers above the ones run were not run."""

    records: list[CheckRecord] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)
    not_run: dict[str, str] = field(default_factory=dict)
    environment: dict[str, object] = field(default_factory=dict)
    allow_skip: bool = False
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def by_status(self, status: Status) -> list[CheckRecord]:
        return [r for r in self.records if r.status is status]

    @property
    def ok(self) -> bool:
        """No check failed, at least one ran, and nothing was skipped unless skips are allowed
        (a check that does not apply, `n/a`, is no skip)."""
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
            "notes": self.notes,
            "evidence": self.engine_evidence(),
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
        lines.extend(f"note: {note}" for note in self.notes)
        counts = ", ".join(f"{len(self.by_status(s))} {s.value}" for s in Status)
        verdict = "OK" if self.ok else "FAILED"
        if not self.ok and not self.by_status(Status.FAIL) and self.records:
            verdict += " (skips need --allow-skip)"
        lines.append(f"smoke {verdict}: {counts} in {self.duration_s:.1f}s (tiers: {', '.join(self.tiers) or '-'})")
        return "\n".join(lines)

    def engine_evidence(self) -> list[dict]:
        """One row per engine-tier comparison: what ran where, on which vLLM build, the verdict, the
        seconds its generate runs took (the PR body's evidence)."""
        engine = self.environment.get("engine")
        engine = engine if isinstance(engine, dict) else {}
        rows = []
        for record in (r for r in self.records if r.tier == "engine" and r.check == "tokens-equal-pp1"):
            runs = [r for r in self.records if r.tier == "engine" and r.check == "generate"
                    and (r.arch, r.path) == (record.arch, record.path)]
            rows.append({
                "arch": record.arch,
                "path": record.path,
                "tier": "engine",
                "pp": record.pp,
                "device": record.device or engine.get("device"),
                "vllm": f"{engine.get('build') or 'vllm'} {engine.get('vllm')}" if engine else None,
                "tokens_equal": {"pass": True, "fail": False}.get(record.status.value),
                "status": record.status.value,
                "seconds": round(sum(r.duration_s for r in runs), 1),
            })
        return rows


def _clip(text: str, width: int = 240) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
