"""The architectures a release before `SupportsPP` (vLLM <= 0.6.1, and forks of that era) allows
to run with PP>1: the module-level list `_PP_SUPPORTED_MODELS` of its config module, which the
engine checks the model's architectures against. A class it allows is a PP model, as a class
that declares `SupportsPP` is in later releases.

The list is read from the checked files, and from the `config.py` modules of the package whose
registry the run reads when that registry is an old one (its models package's `__init__.py`):
the list is there, outside the models folder usually checked.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import inputs
from .discover import read_regular
from .index import ClassRef, Index
from .registry import RegistryEntry, root_of
from .vllm_names import PP_LIST, REGISTRY

CONFIG = "config.py"
MAX_SCANNED = 2**20


@dataclass
class Allowed:
    """The classes the lists allow, where the lists are, and what could not be resolved."""

    classes: list[ClassRef] = field(default_factory=list)
    lists: list[tuple[Path, int]] = field(default_factory=list)
    """Each list read, with how many architectures it names."""
    unresolved: list[str] = field(default_factory=list)


def read_list(data: bytes) -> list[str] | None:
    """The architectures of a module-level `_PP_SUPPORTED_MODELS = [...]` (list, tuple or set of
    string literals); None when the module has no such list."""
    if PP_LIST.encode() not in data:
        return None
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None
        )
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == PP_LIST and isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            return [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


def list_files(files: list[Path], registry: Path | None) -> list[Path]:
    """The checked `config.py` files, and those of the old registry's package."""
    found = [path for path in files if path.name == CONFIG]
    if registry is not None and registry.name == "__init__.py" and not inputs.is_file(registry.parent / REGISTRY.name):
        root = root_of(registry)
        package = root / registry.resolve().relative_to(root).parts[0]
        for folder, dirs, names in os.walk(package):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            if CONFIG in names:
                found.append(Path(folder) / CONFIG)
    return list({path.resolve(): path for path in reversed(found)}.values())[::-1]


def allowed(index: Index, files: list[Path], registry: Path | None, registered: list[RegistryEntry],
            subjects: list[ClassRef]) -> Allowed:
    """The classes the lists allow: each architecture's registered class, or without a registry
    entry for it, a checked class of that name (vLLM named its classes after the architectures)."""
    result = Allowed()
    by_arch: dict[str, list[RegistryEntry]] = {}
    for entry in registered:
        by_arch.setdefault(entry.arch, []).append(entry)
    for path in list_files(files, registry):
        archs = read_list(_small(path))
        if archs is None:
            continue
        result.lists.append((path, len(archs)))
        for arch in archs:
            refs = [ref for e in by_arch.get(arch, []) for ref in index.lookup(e.module, e.cls)]
            refs = refs or [ref for ref in subjects if ref.header.name == arch]
            if not refs:
                result.unresolved.append(arch)
            result.classes.extend(ref for ref in refs if ref not in result.classes)
    return result


def _small(path: Path) -> bytes:
    """The bytes of a regular file under MAX_SCANNED; empty for anything else."""
    inputs.note(path)
    try:
        return read_regular(path) if path.stat().st_size <= MAX_SCANNED else b""
    except OSError:
        return b""
