"""vLLM's model registry, read statically: which classes are registered architectures."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .discover import read_regular
from .vllm_names import MODELS_PACKAGE, REGISTRY, REGISTRY_TABLE_SUFFIX


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
    """The registry of the vLLM checkout containing `start` (or below it), if there is one."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        candidate = folder / REGISTRY
        if candidate.is_file():
            return candidate
    return None


def root_of(registry: Path) -> Path:
    """The import root (the folder holding `vllm/`) of a registry file."""
    parents = registry.resolve().parents
    if len(parents) < len(REGISTRY.parts):
        raise RegistryError(f"not a model registry: it is not at {REGISTRY.as_posix()} under an import root")
    return parents[len(REGISTRY.parts) - 1]


def load_registry(path: Path) -> list[RegistryEntry]:
    """Every `"Arch": ("module", "Class")` entry of the module-level `*_MODELS` dict literals.
    Raises RegistryError for a file that is not readable Python (mid-edit, or not a registry)."""
    try:
        tree = ast.parse(read_regular(path), filename=str(path))
    except SyntaxError as error:
        raise RegistryError(f"not a model registry: syntax error: {error.msg} (line {error.lineno})") from None
    except ValueError as error:  # a null byte
        raise RegistryError(f"not a model registry: {error}") from None
    except (RecursionError, MemoryError):
        raise RegistryError("not a model registry: too deeply nested for Python's parser") from None
    except OSError as error:
        raise RegistryError(f"cannot read the registry: {error.strerror or error}") from None
    entries: list[RegistryEntry] = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None
        )
        if not (isinstance(target, ast.Name) and target.id.endswith(REGISTRY_TABLE_SUFFIX)):
            continue
        if not isinstance(node.value, ast.Dict):
            continue
        for key, value in zip(node.value.keys, node.value.values, strict=False):
            entry = _entry(key, value, target.id)
            if entry:
                entries.append(entry)
    return entries


def _entry(key: ast.expr | None, value: ast.expr, table: str) -> RegistryEntry | None:
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    if not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
        return None
    module, cls = value.elts
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in (module, cls)):
        return None
    name = module.value if module.value.startswith("vllm.") else f"{MODELS_PACKAGE}.{module.value}"
    return RegistryEntry(key.value, name, cls.value, table, key.lineno)
