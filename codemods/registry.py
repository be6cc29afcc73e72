"""vLLM's model registry, read statically: which classes are registered architectures."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REGISTRY = Path("vllm/model_executor/models/registry.py")
MODELS_PACKAGE = "vllm.model_executor.models"


@dataclass(frozen=True)
class RegistryEntry:
    """One architecture: `arch` resolves to class `cls` of dotted module `module`."""

    arch: str
    module: str
    cls: str
    table: str
    line: int


def find_registry(start: Path) -> Path | None:
    """The registry of the vLLM checkout containing `start` (or below it), if there is one."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        candidate = folder / REGISTRY
        if candidate.is_file():
            return candidate
    return None


def root_of(registry: Path) -> Path:
    """The import root (the folder holding `vllm/`, or a fork's top-level package) of a registry file."""
    if is_vllm_registry(registry):
        return registry.resolve().parents[len(REGISTRY.parts) - 1]
    folder = registry.resolve().parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def package_of(path: Path) -> str:
    """The dotted package a registry file lives in (`vllm.model_executor.models` for vLLM's):
    the package its relative module names are resolved in."""
    folder = path.resolve().parent
    parts: list[str] = []
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts) or MODELS_PACKAGE


def load_registry(path: Path) -> list[RegistryEntry]:
    """Every `"Arch": ("module", "Class")` or `"Arch": ("folder", "module", "Class")` entry of
    the module-level `*_MODELS` dict literals; module names are relative to the registry's own
    package (a fork's registry maps to the fork), unless already absolute."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    package = MODELS_PACKAGE if path.resolve().as_posix().endswith(REGISTRY.as_posix()) else package_of(path)
    entries: list[RegistryEntry] = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None
        )
        if not (isinstance(target, ast.Name) and target.id.endswith("_MODELS")):
            continue
        table = getattr(node, "value", None)
        if not isinstance(table, ast.Dict):
            continue
        for key, value in zip(table.keys, table.values, strict=False):
            entry = _entry(key, value, target.id, package)
            if entry:
                entries.append(entry)
    return entries


def _entry(key: ast.expr | None, value: ast.expr, table: str, package: str) -> RegistryEntry | None:
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    if not (isinstance(value, ast.Tuple) and len(value.elts) in (2, 3)):
        return None
    texts = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(texts) != len(value.elts):
        return None
    *parts, cls = texts
    relative = ".".join(parts)
    top = package.split(".")[0]
    absolute = relative.startswith(("vllm.", f"{top}."))
    return RegistryEntry(key.value, relative if absolute else f"{package}.{relative}", cls, table, key.lineno)


def is_vllm_registry(path: Path) -> bool:
    return path.resolve().as_posix().endswith(REGISTRY.as_posix())
