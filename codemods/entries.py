"""Which classes are entries (the top-level model a runner builds), and where that came from.

Sources, first that applies: vLLM's registry found above the checked paths (`registry.py`, or
before that file the tables in the models package's `__init__.py`), or one with vLLM's tables
under another package name (a fork that renamed the package); otherwise a registry given with
`--registry` or a fork's registry inside the checked tree (any package prefix, 2- and 3-tuples,
in `models/registry.py` or `models/__init__.py`) together with the plugin's own
`register_model(...)` calls; otherwise every SupportsPP class, except draft heads and classes
another class of the tree builds as a submodule. Draft heads run with PP=1 and are never entries.
A release before `SupportsPP` names the architectures allowed PP>1 in `_PP_SUPPORTED_MODELS`
(`pplist`): each class it allows is a PP model and an entry.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from . import inputs, pplist
from .index import ClassRef, Index, import_root, module_of
from .memo import Memo
from .registry import RegistryEntry, RegistryError, has_tables, is_vllm_registry, load_registry, root_of
from .vllm_names import DRAFT_TABLE, OLD_REGISTRY, OLD_TEXT_TABLE, PP_INTERFACE, PP_LIST, PRODUCER, REGISTRY, TEXT_TABLE

DRAFT_CLASS = re.compile(r"MTP|Eagle|EAGLE|Medusa|Speculator|Drafter|DFlash")
DRAFT_MODULE = re.compile(r"(^|_)(mtp|eagle\d*|medusa|drafter|speculator)(_|$)")
MAX_SCANNED = 2**20
CLASS_HEADER = re.compile(rb"^[ \t]*class\s+\w+\s*\(([^)]*)", re.M)
WORD = re.compile(rb"\w+")
VLLM_TABLES = (TEXT_TABLE, OLD_TEXT_TABLE)
"""A registry with one of these is vLLM's (of its release), kept by a fork that may have renamed it."""


@dataclass
class Entries:
    """The entries bearing on the targets, the draft heads, and how they were found."""

    entries: list[ClassRef] = field(default_factory=list)
    drafts: list[ClassRef] = field(default_factory=list)
    registered: list[RegistryEntry] = field(default_factory=list)
    source: str = "fallback"
    """"registry" (vLLM's), "fork-registry", "plugin", or "fallback" (SupportsPP classes)."""
    detail: str = ""
    unverified: list[str] = field(default_factory=list)

    @property
    def from_registry(self) -> bool:
        return self.source != "fallback"


def is_draft(ref: ClassRef) -> bool:
    """A draft head by its name (MTP, EAGLE, Medusa, speculator): for entries not read from
    vLLM's registry, which keeps draft heads in a table of their own."""
    leaf = ref.module.module.rpartition(".")[2]
    return bool(DRAFT_CLASS.search(ref.cls.name) or DRAFT_MODULE.search(leaf))


def fork_registry(files: list[Path]) -> Path | None:
    """A `registry.py` holding `*_MODELS` tables (one that cannot be read is not one) in a
    `models` package of the checked files, else such a package's `__init__.py` holding them (a
    fork of a release before `registry.py`: aphrodite's `modeling/models/__init__.py`)."""
    folders = list(dict.fromkeys(path.parent for path in files if path.parent.name == "models"))
    for name in (REGISTRY.name, OLD_REGISTRY.name):
        for folder in folders:
            if has_tables(folder / name):
                return folder / name
    return None


def collect(index: Index, targets, files: list[Path], registry: Path | None, registered: list[RegistryEntry],
            paths: list[Path], subjects: list[ClassRef]) -> Entries:
    """The entries; `registered` is what `registry` holds (read once by the engine). A tree of
    vLLM <= 0.6.1 allows PP>1 by a list of architectures, which `SupportsPP` later replaced: a
    class the list allows is a PP model (`Index.pp_listed`) and an entry."""
    listed = pplist.allowed(index, files, registry, registered, subjects)
    index.pp_listed.update(ref.key for ref in listed.classes)
    result = _collect(index, targets, files, registry, registered, paths, subjects)
    if listed.lists:
        checked = {m.path for m in targets}
        result.entries += [r for r in listed.classes if r.module.path in checked and r not in result.entries]
        result.drafts = [d for d in result.drafts if d not in result.entries]
        result.detail += "; " + "; ".join(
            f"`{PP_LIST}` of {path} ({count} architecture(s) allowed PP>1, before `SupportsPP`)" for path, count in listed.lists
        )
    if listed.unresolved:
        result.unverified.append(
            f"`{PP_LIST}`: {len(listed.unresolved)} architecture(s) it allows resolve to no class here: "
            + ", ".join(listed.unresolved[:5]) + (" ..." if len(listed.unresolved) > 5 else "")
        )
    return result


def _collect(index: Index, targets, files: list[Path], registry: Path | None, registered: list[RegistryEntry],
             paths: list[Path], subjects: list[ClassRef]) -> Entries:
    if registry is not None and (is_vllm_registry(registry) or any(e.table in VLLM_TABLES for e in registered)):
        return _from_vllm(index, targets, registry, registered)
    from .plugins import read_registrations  # configparser and the plugin readers: not for vLLM's tree

    result = Entries()
    parts: list[str] = []
    if registry is not None:
        result.registered = list(registered)
        parts.append(f"registry {registry} ({len(result.registered)} architectures)")
    registrations = 0
    folders: dict[Path, Path] = {}
    for path in files:
        data = _small_regular_file(path)
        if b"register_model" not in data:
            continue
        root, name = module_of(path, folders)
        index.add_root(root)  # the modules it names are its package's, read or not
        try:
            found = read_registrations(data, name, path.name == "__init__.py")
        except (SyntaxError, ValueError):
            continue
        result.registered.extend(found.entries)
        registrations += len(found.entries)
        result.unverified += [
            f"{path}:{line}: register_model(...) with arguments that are not literal: its architecture is not an entry"
            for line in found.dynamic
        ]
    if registrations:
        parts.append(f"{registrations} register_model(...) call(s)")
    points = _entry_points(paths, targets)
    if points:
        parts.append("plugin entry point(s) " + ", ".join(f"{p.name} = {p.target} ({p.path.name})" for p in points))
    if result.registered:
        result.source = "plugin" if registry is None else "fork-registry"
        result.detail = "; ".join(parts)
        _resolve(index, result, registry)
        built = _built_elsewhere(index, targets, result.registered)
        result.entries = [r for r in result.entries if r not in built]
        return result
    if registry is not None:
        result.unverified.append(f"registry {registry} has no `*_MODELS` table of (module, class) tuples: no entry read from it")
    result.source = "fallback"
    result.detail = "no registration found" + (f" ({'; '.join(parts)})" if parts else "") + ": SupportsPP classes are the entries, except draft heads and classes built as a submodule"
    built = _built_elsewhere(index, targets, [])
    for ref in subjects:
        if PP_INTERFACE not in index.base_names(ref) or ref in built:
            continue
        (result.drafts if is_draft(ref) else result.entries).append(ref)
    return result


def _small_regular_file(path: Path) -> bytes:
    """The bytes of a regular file under MAX_SCANNED; empty for anything else (a FIFO is never
    opened for a blocking read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SCANNED:
            return b""
        return handle.read()


def _resolve(index: Index, result: Entries, registry: Path | None) -> None:
    """Every registered architecture's class, as an entry or a draft head; those that resolve to
    no class are listed as unverified."""
    missing = []
    vllm_drafts = _vllm_drafts(index)
    for entry in result.registered:
        refs = index.lookup(entry.module, entry.cls)
        if not refs:
            missing.append(entry)
        for ref in refs:
            draft = DRAFT_TABLE in entry.table or entry.arch in vllm_drafts or is_draft(ref)
            group = result.drafts if draft else result.entries
            if ref not in group:
                group.append(ref)
    result.drafts = [d for d in result.drafts if d not in result.entries]
    if missing and len(missing) == len(result.registered):
        where = f"registry {registry}" if registry else "the register_model(...) calls"
        result.unverified.append(
            f"{where}: none of {len(missing)} architectures resolves to a class in the checked tree or extra paths "
            f"(first: {missing[0].arch} -> {missing[0].module}.{missing[0].cls}); no entry from it"
        )
    elif missing:
        result.unverified.append(
            f"{len(missing)} registered architecture(s) resolve to no class here: "
            + ", ".join(f"{e.arch} -> {e.module}.{e.cls}" for e in missing[:5]) + (" ..." if len(missing) > 5 else "")
        )


def _vllm_drafts(index: Index) -> set[str]:
    """The architectures that vLLM's own registry lists as draft heads, where the run can read it
    (an extra path, the installed vLLM): a plugin that registers one replaces a drafter."""
    for root in index.roots:
        path = root / REGISTRY
        if inputs.is_file(path):
            try:
                return {e.arch for e in load_registry(path) if DRAFT_TABLE in e.table}
            except RegistryError:
                return set()
    return set()


def _built_elsewhere(index: Index, targets, registered: list[RegistryEntry]) -> set[ClassRef]:
    """Classes another class of the tree builds as a submodule (directly, or through a model
    builder told `architectures=["X"]`): stages of a composite model, not top-level models.
    Only builders that supply a factory of their own count: a wrapper without one delegates to
    what it builds, which then needs its own."""
    archs = {e.arch: (e.module, e.cls) for e in registered}
    built: set[ClassRef] = set()
    for module in targets:
        for cls in module.classes.values():
            if not (cls.producers or PRODUCER in cls.method_names):
                continue
            for subs in cls.submodules.values():
                for sub in subs:
                    if sub.dynamic:
                        found = index.lookup(*archs[sub.arch]) if sub.arch in archs else []
                    else:
                        found = index.resolve(module, sub.ctor)
                    built.update(r for r in found if r.cls is not cls)
    return built


def _entry_points(paths: list[Path], targets) -> list:
    from .plugins import plugin_entry_points

    folders: list[Path] = []
    for path in paths:
        path = path.resolve()
        folder = path if inputs.is_dir(path) else path.parent
        folders += [folder, import_root(folder / "__init__.py") if inputs.is_file(folder / "__init__.py") else folder]
    folders += [Path(targets[0].path).resolve().parent] if targets and not folders else []
    seen: list = []
    for folder in dict.fromkeys(f for f in folders):
        for candidate in (folder, folder.parent):
            for point in plugin_entry_points(candidate):
                if point not in seen:
                    seen.append(point)
    return seen


def _from_vllm(index: Index, targets, registry: Path, registered: list[RegistryEntry]) -> Entries:
    """vLLM's registry, or a renamed fork's: every registered class is a top-level model (one that
    another model also builds is still built on its own); only modules that bear on the targets
    are loaded."""
    detail = f"vLLM registry {registry}" if is_vllm_registry(registry) else f"registry {registry} (vLLM's tables)"
    result = Entries(registered=registered, source="registry", detail=detail)
    root = root_of(registry)
    names = {c.name for m in targets for c in m.classes.values()}
    encoded = {n.encode() for n in names}
    in_entries: set[ClassRef] = set()
    in_drafts: set[ClassRef] = set()
    bases: Memo[frozenset[bytes]] = Memo(index.cache.folder, "class-bases", __file__)
    for entry in registered:
        known = index.by_name.get(entry.module) is not None or entry.cls in names
        if not known and not _matches(root, entry.module, encoded, bases):
            continue
        group = result.drafts if DRAFT_TABLE in entry.table else result.entries
        held = in_drafts if group is result.drafts else in_entries
        for ref in index.lookup(entry.module, entry.cls):
            if ref not in held:
                held.add(ref)
                group.append(ref)
    result.drafts = [d for d in result.drafts if d not in in_entries]
    bases.flush()
    return result


def _matches(root: Path, module: str, names: set[bytes], bases: Memo[frozenset[bytes]]) -> bool:
    """Whether a module (not among the targets) defines a subclass of a class named in `names`."""
    base = os.path.join(root, *module.split("."))  # not pathlib: 400 modules a one-file check
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        try:
            words = bases.get(candidate, _base_words, _read)
        except OSError:
            continue
        return not names.isdisjoint(words)
    return False


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _base_words(data: bytes) -> frozenset[bytes]:
    """Every word of the base lists of a module's class headers."""
    return frozenset(word for header in CLASS_HEADER.finditer(data) for word in WORD.findall(header.group(1)))
