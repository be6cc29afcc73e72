"""The pipeline: discover -> analyze -> rules -> (fix plans -> transform -> verify -> write)."""

from __future__ import annotations

import ast
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import progress, rules
from .analysis import analyze_source
from .cache import FactsCache, default_folder
from .config import Options
from .discover import discover, read_source
from .facts import ModuleFacts
from .findings import Applicability, FileChange, FileError, Finding, Report
from .index import ClassRef, Index, import_root, module_name
from .registry import find_registry, load_registry, root_of
from .resolve import Resolver
from .suppress import apply_suppressions

PARALLEL_THRESHOLD = 48
DRAFT_TABLE = "SPECULATIVE"


@dataclass
class Session:
    """The analyzed state of one run: the index, the target modules and the registry in use."""

    index: Index
    targets: list[ModuleFacts]
    registry: Path | None
    options: Options
    sources: dict[str, bytes] = field(default_factory=dict)
    """The bytes each target was analyzed from: fixes rewrite these, and writing checks the disk still holds them."""


def check(paths: list[Path], options: Options) -> Report:
    report = Report()
    session = analyze(paths, options, report)
    report.findings, report.notes = evaluate(session)
    return report


def fix(paths: list[Path], options: Options, write: bool = True) -> Report:
    """Apply the allowed fixes; each file is written only once its rewrite is verified."""
    from .apply import FixError, edits_of, rewrite, verify_scope, verify_syntax, write_atomic

    report = Report(written=write)
    session = analyze(paths, options, report)
    report.findings, report.notes = evaluate(session)
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if options.unsafe_fixes else set())
    fixable = [f for f in report.findings if f.fix and f.fix.applicability in allowed]
    rewrites = {}
    for path, edits in progress.track(edits_of(fixable).items(), "files fixed"):
        problem = _unparsable(session.sources[str(path)], str(path))
        if problem:
            report.errors.append(FileError(path, problem))
            continue
        try:
            result = rewrite(session.sources[str(path)], edits)
            verify_syntax(result, path)
            verify_scope(result)
        except (FixError, OSError) as error:
            report.errors.append(FileError(path, f"fix not applied: {error}"))
            continue
        if result.after != result.before:
            rewrites[path] = result
    fixed_by_path = {
        path: [f for f in fixable if any(e.path == path for e in f.fix.edits)] for path in rewrites
    }
    for path in _recheck(session, rewrites, fixed_by_path, report):
        result = rewrites[path]
        if write:
            try:
                write_atomic(path, result)
            except (FixError, OSError) as error:
                report.errors.append(FileError(path, f"not written: {error}"))
                continue
        report.changes.append(FileChange(path, result.before, result.after, tuple(fixed_by_path[path])))
        report.fixed.extend(f for f in fixed_by_path[path] if f not in report.fixed)
    return report


def _identity(finding: Finding) -> tuple:
    return (finding.rule, str(finding.path), finding.cls, finding.keys)


def _recheck(session: Session, rewrites: dict, fixed_by_path: dict, report: Report) -> list[Path]:
    """Re-analyze with the rewrites in place; keep the files whose fixed findings are gone
    and that gained no new finding."""
    if not rewrites:
        return []
    before = {_identity(f) for f in report.findings}
    originals = {}
    for path, result in rewrites.items():
        old = session.index.by_path[str(path)]
        originals[path] = old
        session.index.replace(analyze_source(result.after, str(path), old.module))
    session.targets = [session.index.by_path[m.path] for m in session.targets]
    after, _ = evaluate(session)
    remaining = {_identity(f) for f in after}
    kept = []
    for path in rewrites:
        still = [f for f in fixed_by_path[path] if _identity(f) in remaining]
        new = [f for f in after if str(f.path) == str(path) and _identity(f) not in before]
        if still or new:
            problem = still[0] if still else new[0]
            verb = "still reported" if still else "introduced"
            report.errors.append(FileError(path, f"fix not applied: {problem.rule} {verb} after the fix"))
            continue
        kept.append(path)
    for old in originals.values():
        session.index.replace(old)
    session.targets = [session.index.by_path[m.path] for m in session.targets]
    return kept


def analyze(paths: list[Path], options: Options, report: Report) -> Session:
    found = discover(paths, options.exclude)
    report.errors.extend(found.errors)
    report.files_scanned = len(found.files)
    sources: list[tuple[Path, bytes]] = []
    for path in found.files:
        try:
            data = read_source(path)
        except OSError as error:
            report.errors.append(FileError(path, f"cannot read: {error.strerror or error}"))
            continue
        if data is not None:
            sources.append((path, data))
    registry = _registry(paths, options)
    roots = {import_root(p) for p, _ in sources}
    if registry:
        roots.add(root_of(registry))
    cache = FactsCache(default_folder() if options.cache else None)
    index = Index(sorted(roots, key=lambda r: len(r.parts), reverse=True), cache)
    targets = []
    for path, result in zip((p for p, _ in sources), _analyze_all(sources, index, options.jobs), strict=False):
        if isinstance(result, str):
            report.errors.append(FileError(path, result))
            continue
        index.add(result)
        targets.append(result)
    return Session(index, targets, registry, options, {str(p): d for p, d in sources})


def _registry(paths: list[Path], options: Options) -> Path | None:
    for candidate in options.registry:
        if candidate.is_file():
            return candidate
    for path in paths:
        found = find_registry(path)
        if found:
            return found
    return None


def _unparsable(data: bytes, path: str) -> str | None:
    """Why a file to be rewritten does not parse as a whole, if it does not: the analysis may
    have parsed only part of it, and libcst must not meet what Python refuses (it can crash on
    deep nesting)."""
    try:
        ast.parse(data, filename=path)
    except SyntaxError as error:
        return f"syntax error: {error.msg} (line {error.lineno})"
    except (ValueError, UnicodeDecodeError) as error:
        return f"cannot parse: {error}"
    except (RecursionError, MemoryError):
        return "cannot parse: too deeply nested for Python's parser"
    return None


def _job(item: tuple[str, bytes, str]) -> ModuleFacts | str:
    path, data, name = item
    try:
        return analyze_source(data, path, name)
    except SyntaxError as error:
        return f"syntax error: {error.msg} (line {error.lineno})"
    except (ValueError, UnicodeDecodeError) as error:
        return f"cannot parse: {error}"
    except (RecursionError, MemoryError):
        return "cannot parse: too deeply nested for Python's parser"


def _analyze_all(sources: list[tuple[Path, bytes]], index: Index, jobs: int) -> list[ModuleFacts | str]:
    """Facts for every source: cached ones read back, the rest parsed (in parallel when many)."""
    results: list[ModuleFacts | str | None] = []
    misses: list[tuple[int, str, tuple[str, bytes, str]]] = []
    for path, data in sources:
        name = module_name(path, import_root(path))
        key = index.cache.key(data, name)
        results.append(index.cache.get(key, str(path)))
        if results[-1] is None:
            misses.append((len(results) - 1, key, (str(path), data, name)))
    workers = jobs or min(len(os.sched_getaffinity(0)), 8)
    items = [m[2] for m in misses]
    hits = len(sources) - len(items)
    if workers <= 1 or len(items) < PARALLEL_THRESHOLD:
        parsed = list(progress.track(map(_job, items), "files analyzed", len(sources), hits))
    else:
        with ProcessPoolExecutor(workers) as pool:
            chunks = pool.map(_job, items, chunksize=max(1, len(items) // (workers * 4)))
            parsed = list(progress.track(chunks, "files analyzed", len(sources), hits))
    for (position, key, _), result in zip(misses, parsed, strict=False):
        results[position] = result
        if not isinstance(result, str):
            index.cache.put(key, result)
    for result, (_, data) in zip(results, sources, strict=True):
        if isinstance(result, ModuleFacts):
            result.source = data
    return results


def evaluate(session: Session) -> tuple[list[Finding], list[Finding]]:
    """Run the selected rules; return (findings, cannot-verify notes), suppressions applied."""
    index = session.index
    subjects = _subjects(session.targets)
    registered = load_registry(session.registry) if session.registry else []
    entries, drafts, found = _entries(session, subjects, registered)
    ctx = rules.Context(
        index=index,
        resolver=Resolver(index, {e.arch: (e.module, e.cls) for e in registered}),
        subjects=subjects,
        entries=entries,
        drafts=drafts,
        registry_found=found,
        targets={m.path for m in session.targets},
        pp002_scope=session.options.pp002_scope,
    )
    findings: list[Finding] = []
    for module in rules.MODULES:
        if session.options.wants(module.RULE.code):
            findings.extend(module.check(ctx))
    names = {name for m in session.targets for name in m.classes}
    findings = [f for f in findings if _concerns_targets(f, ctx.targets, names)]
    findings = apply_suppressions(findings, index, session.targets, session.options)
    notes = sorted((f for f in findings if f.note), key=lambda f: f.sort_key)
    real = sorted((f for f in findings if not f.note), key=lambda f: f.sort_key)
    return real, notes


def _subjects(targets: list[ModuleFacts]) -> list[ClassRef]:
    """The classes to check: those with contract facts of their own (a producer, a method that
    names intermediate tensors), those with a base imported from a models package, and their
    subclasses. Other classes (processors, configs, layers) are never resolved, so their bases
    are never loaded."""
    names = {
        n for m in targets for n, c in m.classes.items()
        if c.producers or c.methods or any(_from_models(m, b) for b in c.bases)
    }
    grown = True
    while grown:
        grown = False
        for m in targets:
            for name, cls in m.classes.items():
                if name not in names and any(b.split(".")[-1] in names for b in cls.bases):
                    names.add(name)
                    grown = True
    return [
        ClassRef(m, c) for m in targets for c in m.classes.values()
        if c.name in names and not c.is_protocol
    ]


def _from_models(module: ModuleFacts, base: str) -> bool:
    head = base.split(".")[0]
    return any("models" in source.split(".") for source, _ in module.imports.get(head, ()))


def _concerns_targets(finding: Finding, targets: set[str], names: set[str]) -> bool:
    """Whether a finding sits in, points into, or names a class of the checked files."""
    if str(finding.path) in targets or any(str(e.path) in targets for e in finding.evidence):
        return True
    return finding.cls in names


def _entries(session: Session, subjects: list[ClassRef], registered: list) -> tuple[list[ClassRef], list[ClassRef], bool]:
    """Registered classes that bear on the targets, as (entries, draft heads, registry found);
    without a registry, SupportsPP classes are the entries.

    Draft heads (the speculative-decoding table) are kept apart: drafters run with
    pipeline_parallel_size=1 and never ask them for intermediate tensors, but their proposers do
    call their forward without `intermediate_tensors`."""
    index = session.index
    if session.registry is None:
        return [r for r in subjects if "SupportsPP" in index.base_names(r)], [], False
    root = root_of(session.registry)
    names = {c.name for m in session.targets for c in m.classes.values()}
    encoded = {n.encode() for n in names}
    entries: list[ClassRef] = []
    drafts: list[ClassRef] = []
    for entry in registered:
        known = index.by_name.get(entry.module) is not None or entry.cls in names
        if not known and not _matches(root, entry.module, encoded):
            continue
        group = drafts if DRAFT_TABLE in entry.table else entries
        for ref in index.lookup(entry.module, entry.cls):
            if ref not in group:
                group.append(ref)
    return entries, [d for d in drafts if d not in entries], True


CLASS_HEADER = re.compile(rb"^[ \t]*class\s+\w+\s*\(([^)]*)", re.M)


def _matches(root: Path, module: str, names: set[bytes]) -> bool:
    """Whether a module (not among the targets) defines a subclass of a class named in `names`."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        try:
            data = candidate.read_bytes()
        except OSError:
            continue
        return any(names.intersection(re.findall(rb"\w+", m.group(1))) for m in CLASS_HEADER.finditer(data))
    return False
