"""The pipeline: discover -> analyze -> rules -> (fix plans -> transform -> verify -> write)."""

from __future__ import annotations

import functools
import gc
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from . import entries, families, inputs, rules, unverified
from . import registry as registry_module
from .cache import FactsCache
from .cachedir import default_folder
from .config import Options
from .discover import Discovery, contract_files, discover, read_regular, read_source, regular_sources, relevant
from .entries import Entries, fork_registry
from .extra import extra_roots
from .facts import ModuleFacts
from .families import FAMILIES, family_of
from .findings import Applicability, FileChange, FileError, Finding, Report
from .index import ClassRef, Index, contract_packages, module_name, module_of
from .memo import Memo
from .registry import RegistryEntry, RegistryError, find_registry, load_registry, root_of
from .resolve import Resolver
from .suppress import apply_suppressions
from .workers import UNPARSABLE, Parser

if TYPE_CHECKING:
    from . import apart
    from .apply import Rewrite

P = ParamSpec("P")
R = TypeVar("R")
MAX_ROUNDS = 10
SHARED_TARGETS = 200
"""Targets from which a run on a warm cache shares its rules with a child. Measured warm, on 2
CPUs: vLLM 0.21.0's tree (303 targets) 16% faster, 0.33.0's models folder (266) 6%; 84 or 125
targets no faster, for 15-40% more CPU time (both processes load some of the same modules)."""


@dataclass
class Session:
    """The analyzed state of one run: the index, the target modules and the registry in use."""

    index: Index
    targets: list[ModuleFacts]
    registry: Path | None
    options: Options
    sources: dict[str, bytes] = field(default_factory=dict)
    """The bytes each target was analyzed from: fixes rewrite these, and writing checks the disk still holds them."""
    registered: list[RegistryEntry] = field(default_factory=list)
    """The registry's entries, read once (a registry that cannot be read is an error, and none)."""
    outside: list[tuple[Path, bytes]] | None = None
    """Files under the roots, not targets, that can hold a class under contract (read on the first re-check)."""
    known: Memo[bool] | None = None
    """The byte search's answers, kept by each file's stat (`discover.contract_files`)."""
    paths: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    """Every discovered file (a plugin's registrations live in files with no contract of their own)."""
    entries: Entries | None = None
    """Where the entries came from, and what could not be verified (set by `evaluate`)."""
    context: list[str] = field(default_factory=list)
    """What the run used beyond the checked files (extra trees, the installed vLLM)."""
    subjects: list[ClassRef] = field(default_factory=list)
    resolver: Resolver | None = None
    pooled: bool = False
    """Whether worker processes parsed the sources."""


def _few_collections(run: Callable[P, R]) -> Callable[P, R]:
    """Run with the cyclic collector's first threshold raised: building syntax trees and facts
    allocates millions of objects and frees them by reference counting, and the default (a
    collection every 700 allocations) spends about 5% of a cold check finding nothing. Worker
    processes forked meanwhile inherit it."""
    @functools.wraps(run)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        before = gc.get_threshold()
        gc.set_threshold(100_000, before[1], before[2])
        try:
            return run(*args, **kwargs)
        finally:
            gc.set_threshold(*before)

    return wrapped


def _selected_families(run: Callable[Concatenate[list[Path], Options, P], R]
                       ) -> Callable[Concatenate[list[Path], Options, P], R]:
    """Run with only the families that have a selected rule analyzed for (`families.only`):
    `--select PP` neither reads the files nor parses the classes that PF and PM alone ask
    for, nor reads their facts (a cold check of vLLM 0.33.0: 1.5 s for PP, 2.2 s for all)."""
    @functools.wraps(run)
    def wrapped(paths: list[Path], options: Options, *args: P.args, **kwargs: P.kwargs) -> R:
        chosen = {family_of(code).prefix for code in rules.ALL if options.wants(code)}
        with families.only(tuple(f for f in FAMILIES if f.prefix in chosen)):
            return run(paths, options, *args, **kwargs)

    return wrapped


@_selected_families
@_few_collections
def check(paths: list[Path], options: Options, found: Discovery | None = None) -> Report:
    """The findings under `paths` (`found`: their discovery, where the caller made it)."""
    report = Report()
    session = analyze(paths, options, report, found)
    report.findings, report.notes = evaluate(session)
    _describe(session, report)
    session.index.flush()
    return report


@_selected_families
@_few_collections
def check_with_fixes(paths: list[Path], options: Options) -> tuple[Report, Report]:
    """A check, and the fixes `fix --unsafe-fixes` would make (nothing written), from one analysis."""
    report = Report()
    session = analyze(paths, options, report)
    report.findings, report.notes = evaluate(session)
    preview = Report(
        findings=list(report.findings), notes=list(report.notes), files_scanned=report.files_scanned, written=False
    )
    _fix(session, preview, {Applicability.SAFE, Applicability.UNSAFE}, write=False)
    session.index.flush()
    return report, preview


@_selected_families
@_few_collections
def fix(paths: list[Path], options: Options, write: bool = True) -> Report:
    """Apply the allowed fixes; each file is written only once its rewrite is verified."""
    report = Report(written=write)
    session = analyze(paths, options, report)
    report.findings, report.notes = evaluate(session)
    _describe(session, report)
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if options.unsafe_fixes else set())
    _fix(session, report, allowed, write)
    session.index.flush()
    return report


def _fix(session: Session, report: Report, allowed: set[Applicability], write: bool) -> None:
    """Fix in rounds, like ruff's fix loop: a fix that a landed fix makes possible (a wrapper's
    delegation to an inner class that has just got one) lands in the next round, so `fix` twice
    never changes anything. Each round's rewrites are verified (they compile, stay inside their
    spans, and the re-check finds the fixed findings gone and nothing new); a file that fails
    keeps the rounds it passed before."""
    from .apply import then

    done: dict[Path, Rewrite] = {}
    fixed_by_path: dict[Path, list[Finding]] = {}
    tried: set[tuple] = set()
    failed: set[Path] = set()
    findings = report.findings
    with _Swap(session) as swap:
        for _ in range(MAX_ROUNDS):
            fixable = [
                f for f in findings
                if f.fix and f.fix.applicability in allowed and _identity(f) not in tried
                and not any(e.path in failed for e in f.fix.edits)
            ]
            if not fixable:
                break
            tried.update(_identity(f) for f in fixable)
            rewrites, facts, by_path = _rewrite_all(session, done, fixable, report, failed)
            kept, findings = _recheck(session, swap, rewrites, facts, by_path, findings, report, failed)
            for path in kept:
                done[path] = then(done[path], rewrites[path]) if path in done else rewrites[path]
                known = fixed_by_path.setdefault(path, [])
                seen = set(known)
                known.extend(dict.fromkeys(f for f in by_path[path] if f not in seen))
            if not kept:
                break
    _finish(done, fixed_by_path, report, write)


class _AsReported:
    """A finding fixed in a later round is the one first reported (without a fix, then)."""

    def __init__(self, reported: list[Finding]) -> None:
        self.reported = set(reported)
        self.first = {_identity(f): f for f in reported}

    def __call__(self, fixed: list[Finding]) -> list[Finding]:
        return [f if f in self.reported else self.first.get(_identity(f), f) for f in fixed]


def _rewrite_all(session: Session, done: dict, fixable: list[Finding], report: Report, failed: set[Path]):
    """Each file's rewrite (of its text after the earlier rounds), verified on its own, with the
    facts of its new text for the re-check."""
    from . import rewriting
    from .apply import edits_of

    jobs = [
        rewriting.Job(path, done[path].after if path in done else session.sources[str(path)], tuple(edits),
                      session.index.by_path[str(path)].module, session.index.cache.folder)
        for path, edits in edits_of(fixable).items()
    ]
    rewrites, facts = {}, {}
    for job, outcome in zip(jobs, rewriting.run(jobs, session.options.jobs), strict=True):
        if outcome.problem:
            report.errors.append(FileError(job.path, outcome.problem))
            failed.add(job.path)
        elif outcome.rewrite is not None and outcome.facts is not None:
            outcome.facts.source = outcome.rewrite.after  # not pickled: a pending class is parsed from it
            rewrites[job.path], facts[job.path] = outcome.rewrite, outcome.facts
    by_path: dict[Path, list[Finding]] = {path: [] for path in rewrites}
    for finding in fixable:
        for path in dict.fromkeys(e.path for e in finding.fix.edits) if finding.fix else ():
            if path in by_path:
                by_path[path].append(finding)
    return rewrites, facts, by_path


def _finish(done: dict, fixed_by_path: dict, report: Report, write: bool) -> None:
    """Write each verified file and record its change; a preview (nothing written) also records
    each fixed finding's own replacements, for the reports that show fixes (SARIF)."""
    from .apply import FixError, shares, write_atomic

    listed = set(report.fixed)
    as_reported = _AsReported(report.findings)
    for path, result in done.items():
        if write:
            try:
                write_atomic(path, result)
            except (FixError, OSError) as error:
                report.errors.append(FileError(path, f"not written: {error}"))
                continue
        found = fixed_by_path[path]
        fixed = tuple(as_reported(found))
        own = None if write else functools.partial(_shares, shares, result, path, found, fixed)
        report.changes.append(FileChange(path, result.before, result.after, fixed, own))
        report.fixed.extend(f for f in dict.fromkeys(fixed) if f not in listed)
        listed.update(fixed)


def _shares(shares: Callable, result: Rewrite, path: Path, found: list[Finding], fixed: tuple[Finding, ...]) -> dict:
    """Each fixed finding's own replacements (`apply.shares`), under the finding as reported."""
    own = shares(result, path, found)
    return {shown: own[f] for f, shown in zip(found, fixed, strict=True) if f in own}


def _describe(session: Session, report: Report) -> None:
    """Say which source of entries and which extra trees the run used, and what it could not verify."""
    found = session.entries
    if found is None or session.resolver is None:
        return
    report.entry_source = found.source
    report.context = [f"entries: {found.source}: {found.detail}", *session.context]
    report.unverified = [
        *found.unverified,
        *unverified.unresolved_bases(session.index, session.resolver.packages, session.subjects),
        *unverified.partial_keys(session.resolver, found.entries),
    ]


def _identity(finding: Finding) -> tuple:
    return (finding.rule, str(finding.path), finding.cls, finding.keys)


class _Swap:
    """Rewritten facts swapped into the shared index for a re-check; `restore` takes back the
    last swap of a path, and whatever happens, the analyzed facts are back when the block ends."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.previous: dict[str, list[ModuleFacts]] = {}

    def __enter__(self) -> _Swap:
        return self

    def put(self, facts: ModuleFacts) -> None:
        old = self.session.index.replace(facts)
        if old is not None:
            self.previous.setdefault(facts.path, []).append(old)
        self._retarget()

    def restore(self, path: str) -> None:
        if self.previous.get(path):
            self.session.index.replace(self.previous[path].pop())
            self._retarget()

    def __exit__(self, *exc) -> None:
        for stack in self.previous.values():
            if stack:
                self.session.index.replace(stack[0])
        self.previous.clear()
        self._retarget()

    def _retarget(self) -> None:
        self.session.targets = [self.session.index.by_path[m.path] for m in self.session.targets]


def _recheck(
    session: Session, swap: _Swap, rewrites: dict, facts: dict, fixed_by_path: dict, current: list[Finding],
    report: Report, failed: set[Path],
) -> tuple[list[Path], list[Finding]]:
    """Re-analyze with the rewrites in place, on the targets and on every class elsewhere that
    shares what they edit (subclasses and users of the rewritten classes, whatever paths were
    given); keep the files whose fixed findings are gone and that gained no new finding. Returns
    the kept files and the findings with them in place."""
    if not rewrites:
        return [], current
    dependents = _dependents(session, rewrites)
    wide = replace(session, targets=session.targets + dependents) if dependents else session
    before = {_identity(f) for f in (evaluate(wide)[0] if dependents else current)}
    for path in rewrites:
        swap.put(facts[path])
    wide = replace(session, targets=session.targets + dependents) if dependents else session
    after, _ = evaluate(wide)
    remaining = {_identity(f) for f in after}
    rejected = []
    for path in rewrites:
        still = [f for f in fixed_by_path[path] if _identity(f) in remaining]
        new = [
            f for f in after if _identity(f) not in before
            and (str(f.path) == str(path) or str(f.path) not in {str(p) for p in rewrites})
        ]
        if still or new:
            problem = still[0] if still else new[0]
            verb = "still reported" if still else "introduced"
            where = "" if str(problem.path) == str(path) else f" in {problem.path}"
            report.errors.append(FileError(path, f"fix not applied: {problem.rule} {verb}{where} after the fix"))
            rejected.append(path)
    for path in rejected:
        swap.restore(str(path))
        failed.add(path)
    kept = [p for p in rewrites if p not in rejected]
    if rejected or dependents:
        after, _ = evaluate(session)
    return kept, after


def _dependents(session: Session, rewrites: dict) -> list[ModuleFacts]:
    """Modules outside the targets that name a class of a rewritten file (as a base, a
    submodule, ...), and their own subclasses elsewhere, transitively: a fix of a shared factory
    must not break them."""
    if session.outside is None:
        session.outside = _outside(session)
    names = {n for path in rewrites for n in session.index.by_path[str(path)].classes}
    found: list[ModuleFacts] = []
    seen: set[str] = set()
    folders: dict[Path, Path] = {}
    while names:
        searched = names
        words = b"|".join(re.escape(n.encode()) for n in sorted(names))
        # the names as words; searched for first without the word bounds, which leave the regex
        # engine no first bytes to skip ahead by (ten times slower on a file that names none)
        anywhere, pattern = re.compile(words), None
        names = set()
        for path, data in session.outside:
            if str(path) in seen or not anywhere.search(data):
                continue
            pattern = pattern or re.compile(rb"\b(?:" + words + rb")\b")  # 10 ms for 1,000 names
            if not pattern.search(data):
                continue
            seen.add(str(path))
            try:
                facts = session.index.parse(data, str(path), module_of(path, folders)[1])
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            session.index.add(facts)
            found.append(facts)
            names.update(n for n, c in facts.classes.items() if any(b.split(".")[-1] in searched for b in c.bases))
    return found


def _outside(session: Session) -> list[tuple[Path, bytes]]:
    """The files under the import roots, not among the targets, that can hold a class under
    contract: the same byte search as discovery, not made again on a file whose stat is
    unchanged since this run or an earlier one made it (the answers are kept in the cache's
    memo: a fix of a whole tree reads nothing here). A file of the same dotted module
    as a target is left out: the target stands in for it (a copy checked outside its tree, as the
    smoke's replay of a fix does), and two modules of one name would shadow each other in the
    index."""
    targets = {m.path for m in session.targets}
    modules = {m.module for m in session.targets}
    discovered = {os.path.abspath(path) for path in session.files}  # each a target or shown to take no part
    known = session.known or contract_files(session.index.cache.folder)
    out = []
    for root in session.index.roots:
        for path in regular_sources(root):
            if str(path) in targets or os.path.abspath(path) in discovered:
                continue
            try:
                # the byte search, kept by the file's stat: `fix` of one file in vLLM's tree read
                # its 3,000 files again on each run for the 300 that can hold a class under contract
                takes_part, read = known.lookup(path, relevant, Path.read_bytes)
                if not takes_part:
                    continue
                data = read if read is not None else path.read_bytes()
            except OSError:
                continue
            if _module_of(path, root) not in modules:  # after the search: it resolves the path
                out.append((path, data))
    known.flush()
    return out


def _module_of(path: Path, root: Path) -> str | None:
    try:
        return module_name(path, root)
    except ValueError:  # a root given unresolved
        return None


def analyze(paths: list[Path], options: Options, report: Report, found: Discovery | None = None) -> Session:
    found = discover(paths, options.exclude) if found is None else found
    report.errors.extend(found.errors)
    files = _once(found.files) if len(paths) > 1 else found.files  # one path reaches a file once
    report.files_scanned = len(files)
    read: list[tuple[int, Path, bytes]] = []
    unreadable: list[tuple[int, FileError]] = []
    roots: set[Path] = set()
    folders: dict[Path, Path] = {}
    cache = FactsCache(default_folder() if options.cache else None)
    known = contract_files(cache.folder) if len(files) > 1 else None  # one file is read anyway
    with Parser(cache, options.jobs) as parser:
        for position in _largest_first(files):
            path = files[position]
            try:
                data = read_source(path, known)
            except OSError as error:
                unreadable.append((position, FileError(path, f"cannot read: {error.strerror or error}")))
                continue
            if data is not None:
                root, name = module_of(path, folders)
                roots.add(root)
                read.append((position, path, data))
                parser.add(path, data, name)
        report.errors.extend(error for _, error in sorted(unreadable, key=lambda found: found[0]))
        if known is not None:
            known.flush()  # while the workers parse
        in_order = sorted(read, key=lambda found: found[0])  # the files' own order again
        sources = [(path, data) for _, path, data in in_order]
        registry = _registry(paths, options) or fork_registry(found.files)
        registered: list[RegistryEntry] = []
        if registry:
            try:
                roots.add(root_of(registry))
                registered = load_registry(registry, Memo(cache.folder, "registry", registry_module.__file__))
            except RegistryError as error:
                report.errors.append(FileError(registry, str(error)))
                registry = None
        extras, context = extra_roots(options.extra_path, roots, sources, options.installed_vllm)
        index = Index(sorted(roots, key=lambda r: len(r.parts), reverse=True) + extras, cache)
        parsed = {position: result for (position, _, _), result in zip(read, parser.results(report.files_scanned), strict=True)}
        targets = []
        for position, path, data in in_order:
            key, result = parsed[position]
            if isinstance(result, str):
                report.errors.append(FileError(path, result))
                continue
            result.source = data
            index.stored(key, result)
            index.add(result)
            targets.append(result)
    return Session(
        index, targets, registry, options, {str(p): d for p, d in sources}, registered,
        paths=list(paths), files=list(found.files), known=known, context=context,
        pooled=parser.pool is not None,
    )


def _largest_first(files: list[Path]) -> list[int]:
    """The order to read `files` in (positions in `files`): the largest first, since those are
    the model files the workers parse, and the longest to parse go best first (they start the
    pool early, and the last batches are short)."""
    sizes = []
    for path in files:
        try:
            sizes.append(os.stat(path).st_size)
        except OSError:  # reported when read
            sizes.append(0)
    return sorted(range(len(files)), key=lambda position: -sizes[position])


def _once(files: list[Path]) -> list[Path]:
    """Each file once, however many given paths reach it (`fix tree tree_alias`). A file that is
    itself a symlink is kept as its own entry: it is a file of its own in git, and writing through
    it is refused under its own name."""
    seen: set[Path] = set()
    out = []
    for path in files:
        if path.is_symlink():
            out.append(path)
            continue
        real = Path(os.path.realpath(path))  # never raises, even on a symlink loop
        if real not in seen:
            seen.add(real)
            out.append(path)
    return out


def _registry(paths: list[Path], options: Options) -> Path | None:
    for candidate in options.registry:
        inputs.note(candidate)
        if candidate.exists():
            return candidate  # one that is not a registry (a folder, a FIFO) is reported when loaded
    for path in paths:
        found = find_registry(path)
        if found:
            return found
    return None


def evaluate(session: Session) -> tuple[list[Finding], list[Finding]]:
    """Run the selected rules; return (findings, cannot-verify notes), suppressions applied."""
    index = session.index
    subjects = _subjects(session.targets)
    found = entries.collect(index, session.targets, session.files, session.registry, session.registered, session.paths, subjects)
    if _adopt_registered(session, found):
        subjects = _subjects(session.targets)
        found = entries.collect(index, session.targets, session.files, session.registry, session.registered, session.paths, subjects)
    ctx = rules.Context(
        index=index,
        resolver=Resolver(index, {e.arch: (e.module, e.cls) for e in found.registered}, contract_packages(session.targets)),
        subjects=subjects,
        entries=found.entries,
        drafts=found.drafts,
        registry_found=found.from_registry,
        targets={m.path for m in session.targets},
        pp002_scope=session.options.pp002_scope,
    )
    wanted = [m for m in rules.MODULES if session.options.wants(m.RULE.code)]
    session.entries, session.subjects, session.resolver = found, subjects, ctx.resolver
    first = [m for m in wanted if not m.RULE.checks_suppressions]
    findings = _check(ctx, first, session.options.jobs if _shared(session) else 1)
    names = {name for m in session.targets for name in m.classes}
    findings = [f for f in findings if _concerns_targets(f, ctx.targets, names)]
    known = {m.RULE.code for m in rules.MODULES}
    findings, ctx.unused_suppressions = apply_suppressions(findings, index, session.targets, session.options, known)
    for module in wanted:
        if module.RULE.checks_suppressions:
            findings.extend(f for f in module.check(ctx) if session.options.wants_in(f.rule, Path(f.path)))
    notes = sorted((f for f in findings if f.note), key=lambda f: f.sort_key)
    real = sorted((f for f in findings if not f.note), key=lambda f: f.sort_key)
    return real, notes


def _shared(session: Session) -> bool:
    """Whether the rules may run in two processes: where workers parsed the sources, or where a
    warm cache left them nothing to parse but the targets are a tree (`SHARED_TARGETS`). A
    forked child counts this process's memory a second time: below the peak the workers set,
    and on a warm tree about the peak of a cold run."""
    return session.pooled or len(session.targets) >= SHARED_TARGETS


def _adopt_registered(session: Session, found: Entries) -> bool:
    """Make targets of the checked files that hold a class a plugin or a fork registers but that
    the byte test left out (a subclass that adds no pipeline-parallel code of its own still is a
    model, with a factory or a tie to check); whether there were any. vLLM's own registry names
    no such file in the releases read (every finding is the same with the byte test off)."""
    if found.source not in ("plugin", "fork-registry"):
        return False
    targets = {m.path for m in session.targets}
    outside = {ref.module.path for ref in found.entries + found.drafts if ref.module.path not in targets}
    names = {os.path.basename(path) for path in outside}
    folders: dict[Path, Path] = {}
    adopted = False
    for path in session.files:
        if path.name not in names or os.path.realpath(path) not in outside:
            continue
        try:
            data = read_regular(path)
            facts = session.index.parse(data, str(path), module_of(path, folders)[1])
        except (OSError, *UNPARSABLE):
            continue  # left as a class read for its header only
        session.index.replace(facts)
        session.targets.append(facts)
        session.sources[str(path)] = data
        adopted = True
    return adopted


def _check(ctx: rules.Context, modules: list[ModuleType], jobs: int) -> list[Finding]:
    """The findings of the rules `modules`, in their order. Those that do not trace (`Rule.traces`)
    run in a forked child while this process runs the others, when a second CPU is there; once
    done, this process takes the child's rules from the back of its list while the child goes on
    from the front. The child hands back the classes it completed, so that the cache stores them
    (those this process completed are stored while the child works)."""
    from . import apart  # imported with the engine, it measured 0.9 MB more at a cold run's peak

    traced = [m for m in modules if m.RULE.traces]
    rest = [m for m in modules if not m.RULE.traces]
    shares = apart.Shares(len(rest))
    child = apart.start(functools.partial(_untraced, ctx, rest, shares), jobs) if traced and rest else None
    if child is None:
        return [finding for m in modules for finding in m.check(ctx)]
    with child:
        found = {m.RULE.code: m.check(ctx) for m in traced}
        ctx.index.flush()  # while the child works: what this process completed, stored now
        for position in reversed(range(len(rest))):
            if not shares.take(position):
                break
            found[rest[position].RULE.code] = rest[position].check(ctx)
        sent = child.result()
    if sent is None:  # the child failed: run its rules here, where an error shows
        found.update((m.RULE.code, m.check(ctx)) for m in rest if m.RULE.code not in found)
    else:
        ctx.index.adopt(sent[1])
        inputs.merge(sent[2])
        found.update(sent[0])
    return [finding for m in modules for finding in found[m.RULE.code]]


def _untraced(ctx: rules.Context, modules: list[ModuleType], shares: apart.Shares
              ) -> tuple[dict[str, list[Finding]], dict, dict | None]:
    """In the child: the findings of the rules of `modules` it took before this process took
    the rest, the classes completed meanwhile, and what it read (`inputs`). A rule that traced
    after all would have changed what the traced rules see: the child then fails (and this
    process runs them, after the others)."""
    before = ctx.index.pending()
    found = {}
    for position, module in enumerate(modules):
        if not shares.take(position):
            break
        found[module.RULE.code] = module.check(ctx)
    if ctx.resolver.traced():
        raise RuntimeError(f"a rule of {sorted(found)} traces: set its Rule.traces")
    return found, ctx.index.completed_since(before), inputs.recording()


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
