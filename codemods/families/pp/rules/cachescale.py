"""Whether the runtime of a checked package can enter a KV-cache-scale branch (PP008).

`if scale_name := self.quant_config.get_cache_scale(name): param = params_dict[scale_name]` runs
only when the quantization method the runtime picked maps the checkpoint name to a scale. Up to
vLLM 0.21.0 `QuantizationConfig.get_cache_scale` returns None and only some methods (fp8, quark)
return a name; by 0.23.0 the method is gone (`get_cache_scale_mapper` replaced it), so the call
raises AttributeError for a quantized model before any lookup. A plugin may register
methods of its own (`@register_quantization_config`) that return names. When neither the
release's quantization package nor the checked package defines a `get_cache_scale` that can
return a name, the lookup is dead there.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from ....facts import ModuleFacts
from ....memo import Memo
from ....rules.base import Context
from ..facts.loading import CACHE_SCALE
from .release import release_folder

QUANTIZATION = ("model_executor", "layers", "quantization")
DEFINITION = f"def {CACHE_SCALE}("


class CacheScales:
    """What the runtime's quantization methods return from `get_cache_scale`, read once per
    package."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._packages: dict[Path, list[str]] = {}
        self._files: Memo[list[str]] = Memo(ctx.index.cache.folder, "cache-scale-naming", __file__)

    def dead(self, module: ModuleFacts) -> str | None:
        """Why no method the runtime of `module`'s package can pick returns a name (the branch is
        never entered), or None when one can, or when the release is not known."""
        release = self.release
        if release is None:
            return None
        folder, base, naming = release
        if naming:
            return None
        root = folder.parents[len(QUANTIZATION) - 1]
        package = _package_root(module)
        if package is not None and package.resolve() != root.resolve() and self._own(package):
            return None  # a plugin's own method, read only when the release's cannot name a scale
        where = root.name
        if DEFINITION not in base:
            return (f"{where}'s `QuantizationConfig` has no `{CACHE_SCALE}` (KV-cache scales are mapped by "
                    f"`get_cache_scale_mapper`), so the call raises AttributeError for a quantized model before "
                    f"the lookup, and no quantization method of {package.name if package else 'the package'} "
                    f"defines one")
        return (f"no quantization method registered in {where} or in "
                f"{package.name if package else 'the package'} returns a name from `{CACHE_SCALE}` "
                "(the base returns None)")

    @functools.cached_property
    def release(self) -> tuple[Path, str, list[str]] | None:
        """The release's quantization folder, its base config's text, and the classes in it whose
        `get_cache_scale` can return a name; None where the release has no such folder."""
        folder = release_folder(self.ctx, *QUANTIZATION)
        base = _text(folder / "base_config.py") if folder else None
        return None if folder is None or base is None else (folder, base, self._naming(folder))

    def _own(self, package: Path) -> list[str]:
        if package not in self._packages:
            self._packages[package] = self._naming(package)
        return self._packages[package]

    def _naming(self, folder: Path) -> list[str]:
        """`Class (file)` for each class under `folder` whose `get_cache_scale` can return a name;
        each file's classes kept between runs by its stat (a one-file check reads none again)."""
        found: list[str] = []
        for path in sorted(folder.rglob("*.py")):
            try:
                found.extend(f"{name} ({path.name})" for name in self._files.get(path, _naming_classes, Path.read_bytes))
            except OSError:
                continue
        self._files.flush()
        return found


def _package_root(module: ModuleFacts) -> Path | None:
    """The folder of the top-level package `module` belongs to."""
    path = Path(module.path)
    depth = len(module.module.split("."))
    up = depth - (1 if path.name == "__init__.py" else 2)
    return path.parents[up] if 0 <= up < len(path.parents) else None


def _naming_classes(data: bytes) -> list[str]:
    """The classes of a file whose `get_cache_scale` can return a name."""
    if DEFINITION.encode() not in data:
        return []
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return []
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and _returns_name(node)]


def _returns_name(cls: ast.ClassDef) -> bool:
    """Whether the class's `get_cache_scale` has a return that is not None."""
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == CACHE_SCALE:
            return any(isinstance(n, ast.Return) and n.value is not None
                       and not (isinstance(n.value, ast.Constant) and n.value.value is None)
                       for n in ast.walk(item))
    return False


def _text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None
