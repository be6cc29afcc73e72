"""Plain data that flows out of the rules: findings, their evidence and their fix plans."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from pathlib import Path

from .edits import Edit
from .replacements import Replacement


class Applicability(str, Enum):
    """How far a fix can be trusted: `safe` fixes are applied by `fix`, `unsafe` ones on request."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Evidence:
    """A source line that supports a finding (where a key is read, sent or allocated)."""

    path: Path
    line: int
    text: str
    role: str = ""


@dataclass(frozen=True)
class Fix:
    """What a finding's fix does (`description`) and the edits that do it."""

    applicability: Applicability
    description: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    rule: str
    name: str
    path: Path
    line: int
    column: int
    cls: str
    message: str
    keys: tuple[str, ...] = ()
    fix: Fix | None = None
    evidence: tuple[Evidence, ...] = ()
    note: str = ""
    latent: bool = False
    """Unreachable in the release checked (vLLM refuses the setting before it): a warning, which
    no runtime check (the smoke) can show failing."""

    @property
    def level(self) -> str:
        """"error", or "warning" for a finding the release cannot reach: a warning is reported
        everywhere but changes the exit code only with `warnings-as-errors`."""
        return "warning" if self.latent else "error"

    @property
    def sort_key(self) -> tuple:
        return (str(self.path), self.line, self.column, self.rule, self.keys)


@dataclass(frozen=True)
class FileError:
    path: Path
    message: str


@dataclass
class Report:
    """The outcome of a check or fix run: what was found, what was changed, what went wrong."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    files_scanned: int = 0
    fixed: list[Finding] = field(default_factory=list)
    changes: list[FileChange] = field(default_factory=list)
    written: bool = True  # False for a fix run that only previews (`fix --diff`)
    entry_source: str = ""
    """Where the entries came from: "registry", "fork-registry", "plugin" or "fallback"."""
    context: list[str] = field(default_factory=list)
    """What the run used beyond the checked files (the entry source in words, extra trees)."""
    unverified: list[str] = field(default_factory=list)
    """What could not be verified and why (unresolved bases, unknown registrations, dynamic keys)."""

    @property
    def remaining(self) -> list[Finding]:
        done = set(self.fixed)
        return [f for f in self.findings if f not in done]


@dataclass(frozen=True)
class FileChange:
    """A verified rewrite of one file: the exact bytes before and after."""

    path: Path
    before: bytes
    after: bytes
    findings: tuple[Finding, ...]
    shares: Callable[[], dict[Finding, tuple[Replacement, ...]]] | None = field(default=None, compare=False, repr=False)
    """Works out `replacements`; None where the file was written (no report shows them)."""

    @cached_property
    def replacements(self) -> dict[Finding, tuple[Replacement, ...]]:
        """Each fixed finding's own share of the change, as text replacements of `before`: a
        diff of the whole file, worked out when a report first asks (only SARIF does)."""
        return self.shares() if self.shares else {}
