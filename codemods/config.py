"""Run options: defaults, then the target repo's `[tool.contractfix]` table, then the command line.

Every key of the table is declared once in `KEYS` (its option name and the parser that checks its
type), so a typo, a wrong type or an unknown rule code is an error naming the file, never a value
silently dropped or misread.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .tomlcompat import tomllib

SCOPES = ("entry", "all")
ALL_SELECTOR = "ALL"


class ConfigError(ValueError):
    """A configuration or option value that cannot be used; the message names where it came from."""


@dataclass(frozen=True)
class Glob:
    """A path glob and the folder it is relative to (the config file's folder, or the current one
    for the command line)."""

    pattern: str
    anchor: Path

    def matches(self, path: Path) -> bool:
        """A pattern without `/` matches a file's or any of its folders' names; one with `/`
        matches the path relative to the anchor (or a folder on it). A path outside the anchor
        is matched on its own components (the pattern anywhere in it)."""
        from fnmatch import fnmatchcase

        parts = _relative_parts(path, self.anchor)
        if parts is None:
            text = path.as_posix()
            return fnmatchcase(text, self.pattern) or fnmatchcase(text, f"*/{self.pattern}")
        pattern = self.pattern.rstrip("/").removeprefix("./")
        if "/" not in pattern:
            return any(fnmatchcase(part, pattern) for part in parts)
        return any(fnmatchcase("/".join(parts[:n]), pattern) for n in range(1, len(parts) + 1))


@dataclass(frozen=True)
class Options:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[Glob, ...] = ()
    per_file_ignores: tuple[tuple[Glob, tuple[str, ...]], ...] = ()
    pp002_scope: str = "entry"
    registry: tuple[Path, ...] = ()
    extra_path: tuple[Path, ...] = ()
    """Trees used only to resolve bases, producers and helpers: never checked, never entries."""
    installed_vllm: bool = True
    """Also resolve through the vLLM the running Python would import (located, never imported)."""
    unsafe_fixes: bool = False
    warnings_as_errors: bool = False
    """Exit 1 for warnings too (findings the release cannot reach)."""
    jobs: int = 0
    cache: bool = True
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    """Where each option set by a user came from (a file path, or "command line")."""

    def wants(self, code: str) -> bool:
        return _matches(code, self.select, True) and not _matches(code, self.ignore, False)

    def wants_in(self, code: str, path: Path) -> bool:
        """Whether `code` is reported in `path` (per-file-ignores applied)."""
        return self.wants(code) and not any(
            _matches(code, codes, False) and glob.matches(path) for glob, codes in self.per_file_ignores
        )


def _matches(code: str, selectors: tuple[str, ...], empty: bool) -> bool:
    if not selectors:
        return empty
    return any(s == ALL_SELECTOR or code.startswith(s) for s in selectors)


def rule_codes() -> list[str]:
    from .rules import ALL

    return sorted(ALL)


def codes(values, where: str) -> tuple[str, ...]:
    """Rule codes or prefixes (case-insensitive, `ALL` for every rule); an unknown one is an error."""
    known = rule_codes()
    out = []
    for value in values:
        code = value.strip().upper()
        if code != ALL_SELECTOR and not any(k.startswith(code) for k in known) or not code:
            near = difflib.get_close_matches(code, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else f"; known: ALL, {', '.join(known)}"
            raise ConfigError(f"{where}: unknown rule code or prefix {value!r}{hint}")
        out.append(code)
    return tuple(out)


# Parsers of table values: (value, key, where, folder of the config file) -> option value.
Parser = Callable[[Any, str, str, Path], Any]


def _strings(value, key: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, not {_shown(value)}")
    return value


def _codes(value, key, where, folder):
    return codes(_strings(value, key, where), f"{where}: `{key}`")


def _globs(value, key, where, folder):
    return tuple(Glob(p, folder) for p in _strings(value, key, where))


def _paths(value, key, where, folder):
    return tuple(folder / p for p in _strings(value, key, where))


def _bool(value, key, where, folder):
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be true or false, not {_shown(value)}")
    return value


def _scope(value, key, where, folder):
    if value not in SCOPES:
        raise ConfigError(f"{where}: `{key}` must be one of {', '.join(SCOPES)}, not {_shown(value)}")
    return value


def _per_file(value, key, where, folder):
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}` must be a table of glob = [codes], not {_shown(value)}")
    return tuple(
        (Glob(glob, folder), _codes(listed, f"{key}.{glob}", where, folder)) for glob, listed in value.items()
    )


KEYS: dict[str, tuple[str, Parser]] = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "exclude": ("exclude", _globs),
    "per-file-ignores": ("per_file_ignores", _per_file),
    "pp002-scope": ("pp002_scope", _scope),
    "registry": ("registry", _paths),
    "extra-path": ("extra_path", _paths),
    "unsafe-fixes": ("unsafe_fixes", _bool),
    "warnings-as-errors": ("warnings_as_errors", _bool),
}
"""`[tool.contractfix]` key -> (Options field, parser). Adding a key is one line here."""


def _shown(value) -> str:
    kind = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list", dict: "a table"}
    return f"{kind.get(type(value), type(value).__name__)} ({value!r})"


def read_table(path: Path) -> dict | None:
    """The contractfix table of a `pyproject.toml` (`[tool.contractfix]`) or of a standalone TOML
    file given with `--config` (its top level); None when a pyproject.toml has no such table."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, not {_shown(tool)}")
    table = tool.get("contractfix")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: `tool.contractfix` must be a table, not {_shown(table)}")
    return table


def find_pyproject(start: Path) -> Path | None:
    """The nearest `pyproject.toml` with a `[tool.contractfix]` table, not above the git root.
    A pyproject.toml that is not valid TOML is an error when it mentions contractfix."""
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
        return read_table(pyproject) is not None
    except ConfigError:
        try:
            mentions = b"contractfix" in pyproject.read_bytes()
        except OSError:
            mentions = False
        if mentions:
            raise
        return False


def from_table(table: dict, where: str, folder: Path) -> dict[str, Any]:
    """Option values of a contractfix table; unknown keys and wrong types are errors."""
    values = {}
    for key, value in table.items():
        if key not in KEYS:
            near = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean `{near[0]}`?)" if near else f"; known keys: {', '.join(KEYS)}"
            raise ConfigError(f"{where}: unknown key `{key}`{hint}")
        name, parse = KEYS[key]
        values[name] = parse(value, key, where, folder)
    return values


def load(start: Path, *, config_file: Path | None = None, isolated: bool = False, **overrides) -> Options:
    """Options from the nearest `pyproject.toml` with `[tool.contractfix]` (or `config_file`; none
    with `isolated`), then `overrides` (command-line values; None or () means "not given").
    `select`, `ignore` and `exclude` overrides may be raw strings: they are checked here."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    source = None if isolated else config_file or find_pyproject(start)
    if source is not None:
        if not source.is_file():
            raise ConfigError(f"{source}: config file not found")
        table = read_table(source) or {}
        values = from_table(table, str(source), source.resolve().parent)
        sources = dict.fromkeys(values, str(source))
    given = {k: v for k, v in overrides.items() if v is not None and v != ()}
    cwd = Path.cwd().resolve()
    for name in ("select", "ignore"):
        if name in given:
            given[name] = codes(given[name], f"--{name}")
    if "exclude" in given:
        given["exclude"] = tuple(g if isinstance(g, Glob) else Glob(g, cwd) for g in given["exclude"])
    if "pp002_scope" in given:
        _scope(given["pp002_scope"], "--pp002-scope", "command line", cwd)
    if "extra_path" in given:
        given["extra_path"] = tuple(given["extra_path"])
    known = {f.name for f in fields(Options)}
    unknown = set(given) - known
    if unknown:
        raise TypeError(f"unknown options {sorted(unknown)}")
    sources.update(dict.fromkeys((k for k in given if k not in ("jobs", "cache")), "command line"))
    options = replace(Options(), **{**values, **given}, sources=sources)
    for path in options.registry:
        if not path.exists():
            raise ConfigError(f"{path}: registry not found")
    for path in options.extra_path:
        if not path.is_dir():
            raise ConfigError(f"{path}: extra path is not a directory")
    return options


def _absolute(path: Path) -> str:
    return os.path.abspath(path)


def _relative_parts(path: Path, anchor: Path) -> tuple[str, ...] | None:
    """`path`'s parts below `anchor` (a resolved folder), as given or with links resolved."""
    for absolute in (_absolute(path), os.path.realpath(path)):
        try:
            return Path(absolute).relative_to(anchor).parts
        except ValueError:
            continue
    return None
