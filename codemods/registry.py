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
    """The import root (the folder holding `vllm/`) of a registry file."""
    return registry.resolve().parents[len(REGISTRY.parts) - 1]


def load_registry(path: Path) -> list[RegistryEntry]:
    """Every `"Arch": ("module", "Class")` entry of the module-level `*_MODELS` dict literals."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    entries: list[RegistryEntry] = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None
        )
        if not (isinstance(target, ast.Name) and target.id.endswith("_MODELS")):
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
