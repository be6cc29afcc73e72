"""vLLM's model registry, read statically: which classes are registered architectures."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from . import inputs
from .discover import read_regular
from .memo import Memo
from .vllm_names import MODELS_PACKAGE, OLD_REGISTRY, REGISTRY, REGISTRY_TABLE_SUFFIX


@dataclass(frozen=True)
class RegistryEntry:
    """One architecture: `arch` resolves to class `cls` of dotted module `module`."""

    arch: str
    module: str
    cls: str
    table: str
    line: int


class RegistryError(ValueError):
    """A registry file that cannot be read as one; the message is fit for a report."""


def find_registry(start: Path) -> Path | None:
    """The registry of the vLLM checkout containing `start` (or below it), if there is one: its
    `registry.py`, or in a release before that file the tables of its models package."""
    start = start.resolve()
    for folder in [start, *start.parents] if inputs.is_dir(start) else list(start.parents):
        candidate = folder / REGISTRY
        if inputs.is_file(candidate):
            return candidate
        if has_tables(folder / OLD_REGISTRY):
            return folder / OLD_REGISTRY
    return None


def has_tables(path: Path) -> bool:
    """Whether `path` is a readable module with a `*_MODELS` table of (module, class) tuples."""
    try:
        data = read_regular(path) if inputs.is_file(path) else b""
        return REGISTRY_TABLE_SUFFIX.encode() in data and bool(_raw_entries(data))
    except (RegistryError, OSError):
        return False


def root_of(registry: Path) -> Path:
    """The import root (the folder holding `vllm/`, or a fork's top-level package) of a registry file."""
    if is_vllm_registry(registry):
        parents = registry.resolve().parents
        if len(parents) < len(REGISTRY.parts):
            raise RegistryError(f"not a model registry: it is not at {REGISTRY.as_posix()} under an import root")
        return parents[len(REGISTRY.parts) - 1]
    folder = registry.resolve().parent
    while inputs.is_file(folder / "__init__.py") and folder.parent != folder:
        folder = folder.parent
    return folder


def package_of(path: Path) -> str:
    """The dotted package a registry file lives in (`vllm.model_executor.models` for vLLM's):
    the package its relative module names are resolved in."""
    folder = path.resolve().parent
    parts: list[str] = []
    while inputs.is_file(folder / "__init__.py") and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts) or MODELS_PACKAGE


def load_registry(path: Path, memo: Memo[list[Raw]] | None = None) -> list[RegistryEntry]:
    """Every `"Arch": ("module", "Class")` or `"Arch": ("folder", "module", "Class")` entry of
    the module-level `*_MODELS` dict literals; module names are relative to the registry's own
    package (a fork's registry maps to the fork), unless already absolute. Raises RegistryError
    for a file that is not readable Python (mid-edit, or not a registry). `memo` keeps the
    literal entries between runs."""
    try:
        if memo is None:
            raw = _raw_entries(read_regular(path))
        else:
            raw = memo.get(path, _raw_entries, read_regular)
            memo.flush()
    except OSError as error:
        raise RegistryError(f"cannot read the registry: {error.strerror or error}") from None
    package = MODELS_PACKAGE if is_vllm_registry(path) else package_of(path)
    top = package.split(".")[0]
    entries = []
    for arch, relative, cls, table, line in raw:
        absolute = relative.startswith(("vllm.", f"{top}."))
        entries.append(RegistryEntry(arch, relative if absolute else f"{package}.{relative}", cls, table, line))
    return entries


Raw = tuple[str, str, str, str, int]
"""An entry as written: architecture, module (relative or not), class, table, line."""


def _raw_entries(data: bytes) -> list[Raw]:
    try:
        tree = ast.parse(data)
    except SyntaxError as error:
        raise RegistryError(f"not a model registry: syntax error: {error.msg} (line {error.lineno})") from None
    except ValueError as error:  # a null byte
        raise RegistryError(f"not a model registry: {error}") from None
    except (RecursionError, MemoryError):
        raise RegistryError("not a model registry: too deeply nested for Python's parser") from None
    entries: list[Raw] = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None
        )
        if not (isinstance(target, ast.Name) and target.id.endswith(REGISTRY_TABLE_SUFFIX)):
            continue
        table = getattr(node, "value", None)
        if not isinstance(table, ast.Dict):
            continue
        for key, value in zip(table.keys, table.values, strict=False):
            entry = _entry(key, value, target.id)
            if entry:
                entries.append(entry)
    return entries


def _entry(key: ast.expr | None, value: ast.expr, table: str) -> Raw | None:
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    if not (isinstance(value, ast.Tuple) and len(value.elts) in (2, 3)):
        return None
    texts = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(texts) != len(value.elts):
        return None
    *parts, cls = texts
    return key.value, ".".join(parts), cls, table, key.lineno


def is_vllm_registry(path: Path) -> bool:
    return path.resolve().as_posix().endswith(REGISTRY.as_posix())
