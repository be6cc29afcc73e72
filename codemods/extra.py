"""Trees outside the checked paths that resolve bases, producers and helpers, never checked and
never a source of entries: `--extra-path` folders, and the installed vLLM when the checked code
imports `vllm` and the checked tree does not hold it (located, never imported)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from . import inputs
from .index import import_root

IMPORTS_VLLM = re.compile(rb"^[ \t]*(?:from|import)[ \t]+vllm\b", re.M)


def extra_roots(folders: tuple[Path, ...], roots: set[Path], sources: list[tuple[Path, bytes]],
                installed: bool = True) -> tuple[list[Path], list[str]]:
    """The import roots to add after the checked tree's own, and a line saying where each came from."""
    found: list[Path] = []
    said: list[str] = []
    for folder in folders:
        folder = folder.resolve()
        root = import_root(folder / "__init__.py") if inputs.is_file(folder / "__init__.py") else folder
        if root not in roots and root not in found:
            found.append(root)
            said.append(f"extra path {root}: resolves bases, producers and helpers only")
    if any(inputs.is_dir(r / "vllm") for r in [*roots, *found]):
        return found, said
    if not installed or not any(IMPORTS_VLLM.search(data) for _, data in sources):
        return found, said
    location = installed_vllm()
    if location is not None and location not in roots:
        found.append(location)
        said.append(f"installed vLLM at {location / 'vllm'} (located with importlib.util.find_spec, not imported): resolves bases, producers and helpers only")
    return found, said


def installed_vllm() -> Path | None:
    """The folder holding the `vllm` package the running Python would import, without importing it."""
    inputs.note_search_path()
    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]).resolve().parent if locations else None
