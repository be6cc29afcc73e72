"""Run options, with defaults from the target repo's `[tool.contractfix]` table."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import tomllib

SCOPES = ("entry", "all")


@dataclass(frozen=True)
class Options:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    pp002_scope: str = "entry"
    registry: tuple[Path, ...] = ()
    extra_path: tuple[Path, ...] = ()
    """Trees used only to resolve bases, producers and helpers: never checked, never entries."""
    installed_vllm: bool = True
    """Also resolve through the vLLM the running Python would import (located, never imported)."""
    unsafe_fixes: bool = False
    jobs: int = 0
    cache: bool = True

    def wants(self, code: str) -> bool:
        selected = not self.select or any(code.startswith(s) for s in self.select)
        return selected and not any(code.startswith(i) for i in self.ignore)


def find_pyproject(start: Path) -> Path | None:
    """The nearest `pyproject.toml` with a `[tool.contractfix]` table, not above the git root."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _has_table(candidate):
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def _has_table(pyproject: Path) -> bool:
    try:
        return "contractfix" in tomllib.loads(pyproject.read_text("utf-8")).get("tool", {})
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
        return False


def load(start: Path, **overrides) -> Options:
    """Options from the nearest `pyproject.toml` with `[tool.contractfix]`, then `overrides`
    (command-line values; None means "not given")."""
    options = Options()
    pyproject = find_pyproject(start)
    if pyproject:
        table = tomllib.loads(pyproject.read_text("utf-8"))["tool"]["contractfix"]
        base = pyproject.parent
        options = replace(
            options,
            select=tuple(table.get("select", ())),
            ignore=tuple(table.get("ignore", ())),
            exclude=tuple(table.get("exclude", ())),
            pp002_scope=table.get("pp002-scope", "entry"),
            registry=tuple(base / p for p in _list(table.get("registry", ()))),
            extra_path=tuple(base / p for p in _list(table.get("extra-path", ()))),
            unsafe_fixes=bool(table.get("unsafe-fixes", False)),
        )
    given = {k: v for k, v in overrides.items() if v is not None and v != ()}
    options = replace(options, **given)
    for path in options.registry:
        if not path.is_file():
            raise ValueError(f"{path}: registry not found")
    for path in options.extra_path:
        if not path.is_dir():
            raise ValueError(f"{path}: extra path is not a directory")
    if options.pp002_scope not in SCOPES:
        raise ValueError(f"pp002-scope must be one of {', '.join(SCOPES)}, not {options.pp002_scope!r}")
    return options


def _list(value) -> list:
    return [value] if isinstance(value, str) else list(value)
