"""What every rule shares: its metadata and the context it checks."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..facts import ClassFacts, Located, ModuleFacts, Producer
from ..findings import Applicability, Evidence, Finding, Fix
from ..index import ClassRef, Index
from ..resolve import Branch, Resolver, Traffic
from ..sourcelines import SourceLines


def quote_keys(keys) -> str:
    """`("a", "b")` -> `"a", "b"`, as keys are written in messages."""
    return ", ".join(f'"{k}"' for k in keys)


def guard_text(guard) -> str:
    """A configuration guard as Python: `self.a and not self.b`."""
    def atom(text: str, polarity: bool) -> str:
        if " " in text and (len(guard) > 1 or not polarity):
            text = f"({text})"
        return text if polarity else f"not {text}"

    return " and ".join(atom(text, polarity) for text, polarity in guard)


@dataclass(frozen=True)
class ExampleTree:
    """Where a rule's example sits in a vLLM tree, and the files beside it that what the rule
    reports depends on (a registry, a base class, a holder): paths relative to the import root."""

    example: str
    files: Mapping[str, str] = field(hash=False)


@dataclass(frozen=True)
class Rule:
    """A rule's metadata: the single source for `rules`, `explain`, the README table, the rule pages and PR bodies."""

    code: str
    name: str
    summary: str
    rationale: str
    before: str
    after: str
    fix: Applicability | None
    checks_suppressions: bool = False
    """Runs once the other rules' findings are suppressed, on the suppressions left unused."""
    traces: bool = False
    """Reads the resolver's traffic or allocation, memoized in the order the rules ask (a cycle is
    cut where it is met first): such rules run in one process, in order; the others may run in
    a forked child beside them (`engine._check`)."""
    tree: ExampleTree | None = None
    """What `before` and `after` need beside them to be reported (or not) as shown; None: alone."""

    @property
    def fix_label(self) -> str:
        return self.fix.value if self.fix else "none"

    def finding(
        self, *, path: Path | str, line: int, column: int, cls: str, message: str, keys: tuple[str, ...] = (),
        fix: Fix | None = None, evidence: tuple[Evidence, ...] | list[Evidence] = (), note: str = "",
        latent: bool = False,
    ) -> Finding:
        """A finding of this rule: code and name come from the metadata."""
        return Finding(
            rule=self.code, name=self.name, path=Path(path), line=line, column=column, cls=cls, message=message,
            keys=tuple(keys), fix=fix, evidence=tuple(evidence), note=note, latent=latent,
        )


@dataclass(frozen=True)
class FactorySite:
    """A place that defines `make_empty_intermediate_tensors`: the class that owns it and its producer."""

    owner: tuple[str, str]
    producer: Producer


@dataclass(frozen=True)
class FactoryUser:
    """A class whose traffic goes through a factory branch, and the keys it lacks or has in excess."""

    ref: ClassRef
    branch: Branch
    traffic: Traffic
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Suppression:
    """A `# contractfix: ignore[CODE]` comment: `code` silenced on line `line` of `path`; `why`
    it is unused, where it is (a key of PP100's `REASONS`)."""

    path: str
    line: int
    code: str
    why: str = "unmatched"


@dataclass
class Context:
    """Everything a rule may look at: the index, the resolver, the classes to check, the entries."""

    index: Index
    resolver: Resolver
    subjects: list[ClassRef]
    entries: list[ClassRef]
    drafts: list[ClassRef]
    registry_found: bool
    targets: set[str]
    pp002_scope: str = "entry"
    unused_suppressions: list[Suppression] = field(default_factory=list)
    _lines: SourceLines = field(default_factory=SourceLines)

    def line(self, path: str, number: int) -> str:
        """Line `number` of `path`, stripped, as evidence shows it."""
        return self._lines.line(path, number)

    def evidence(self, located: list[Located], role: str) -> list[Evidence]:
        seen = set()
        out = []
        for u in located:
            if (u.path, u.use.line) in seen:
                continue
            seen.add((u.path, u.use.line))
            out.append(Evidence(Path(u.path), u.use.line, self.line(u.path, u.use.line), role))
        return out

    def editable(self, path: str) -> bool:
        return path in self.targets

    def target_classes(self) -> Iterator[tuple[ModuleFacts, ClassFacts]]:
        """Every class of the checked files, file by file in path order. A class no need of
        `analysis/needs.py` asked for holds only its header's facts here (its facts of each kind
        are None): a rule that reads a kind of fact from every class declares a need for it."""
        for path in sorted(self.targets):
            module = self.index.by_path.get(path)
            if module is not None:
                yield from ((module, cls) for cls in module.classes.values())
