"""Which architectures a smoke runs: changed model files mapped through vLLM's registry, read statically.

A file inside a vLLM tree (one with `vllm/model_executor/models/registry.py` above it) maps through
that tree's registry; any other file through the installed vLLM's registry, by its file name.
Architectures that share one class are smoked once; classes that cannot be smoked keep a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..registry import RegistryEntry, find_registry, load_registry, root_of
from ..vllm_names import MODELS_PACKAGE, MULTIMODAL_TABLE, SPECULATIVE_TABLE, TRANSFORMERS_TABLES
from .drafters import DRAFTERS, Drafter
from .errors import UsageError

NOT_SMOKED = {
    SPECULATIVE_TABLE: f"a draft model with no known target config (the drafter check builds {', '.join(DRAFTERS)})",
    **{table: "served by the Transformers backend, not by a vLLM model file" for table in TRANSFORMERS_TABLES},
    MULTIMODAL_TABLE: "a multimodal model: the smoke builds text-only tiny models",
}


@dataclass(frozen=True)
class Target:
    """One class to smoke as architecture `arch`.

    `path` is the changed file loaded in place of `module` (None: the installed module runs);
    `overrides` are all changed files of the same tree, as (module, file), loaded together;
    `skip` says why the class cannot be smoked (empty: it can); `draft`: how to build it, for a
    draft head (smoked as the last PP rank builds it, not as a pipeline).
    """

    arch: str
    module: str
    cls: str
    path: Path | None = None
    overrides: tuple[tuple[str, str], ...] = ()
    aliases: tuple[str, ...] = ()
    skip: str = ""
    notes: tuple[str, ...] = ()
    draft: Drafter | None = None


def select_targets(paths: list[Path], arch: str | None = None, installed: Path | None = None) -> list[Target]:
    """Targets for `paths` (or for `arch` alone); `installed` is the installed vLLM's registry."""
    if not paths:
        if not arch:
            raise UsageError("name changed model files, or an architecture with --arch")
        if installed is None:
            raise UsageError("--arch without files needs a Python with vLLM")
        chosen = [e for e in load_registry(installed) if e.arch == arch]
        if not chosen:
            raise UsageError(f"architecture {arch} is not in the installed vLLM's registry")
        return _targets(chosen, (), ())
    mapped = [_locate(p.resolve(), installed) for p in paths]
    overrides_by_root: dict[Path | None, list[tuple[str, str]]] = {}
    for place in mapped:
        if place.module and place.root is not None:
            overrides_by_root.setdefault(place.root, []).append((place.module, str(place.path)))
    targets: list[Target] = []
    seen: set[tuple] = set()
    for place in mapped:
        if place.skip or place.registry is None:  # no registry: skip says why
            targets.append(Target("", place.module, "", place.path, skip=place.skip))
            continue
        overrides = tuple(overrides_by_root.get(place.root, [(place.module, str(place.path))]))
        entries = load_registry(place.registry)
        chosen = [e for e in entries if e.arch == arch] if arch else [e for e in entries if e.module == place.module]
        if not chosen:
            why = f"{arch} is not registered" if arch else f"no registered architecture is defined in {place.module}"
            targets.append(Target("", place.module, "", place.path, overrides, skip=why))
            continue
        for target in _targets(chosen, overrides, place.notes):
            key = (target.arch, target.overrides)
            if key not in seen:
                seen.add(key)
                targets.append(target)
    return targets


@dataclass(frozen=True)
class _Place:
    path: Path
    module: str
    registry: Path | None
    root: Path | None
    skip: str = ""
    notes: tuple[str, ...] = ()


def _locate(path: Path, installed: Path | None) -> _Place:
    registry = find_registry(path)
    if registry is not None:
        root = root_of(registry)
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return _Place(path, ".".join(parts), registry, root)
    module = f"{MODELS_PACKAGE}.{path.stem}"
    if installed is None:
        return _Place(path, module, None, None, skip="not in a vLLM tree, and no installed vLLM to map it by name")
    note = f"{path} is not in a vLLM tree: it stands in for the installed {module}"
    return _Place(path, module, installed, None, notes=(note,))


def _targets(entries: list[RegistryEntry], overrides: tuple, notes: tuple) -> list[Target]:
    """One target per class: named by the entry whose name is the class's, from a smoked table."""
    changed = {module: Path(file) for module, file in overrides}
    by_class: dict[tuple[str, str], list[RegistryEntry]] = {}
    for entry in entries:
        by_class.setdefault((entry.module, entry.cls), []).append(entry)
    targets = []
    for (module, cls), group in by_class.items():
        group.sort(key=lambda e: (e.table in NOT_SMOKED, e.arch != cls, e.line))
        main = group[0]
        aliases = tuple(sorted(e.arch for e in group[1:]))
        draft = DRAFTERS.get(main.arch) if main.table == SPECULATIVE_TABLE else None
        skip = "" if draft else NOT_SMOKED.get(main.table, "")
        targets.append(Target(main.arch, module, cls, changed.get(module), overrides, aliases, skip, notes, draft))
    return targets
