"""A check's output kept between runs, valid while nothing it was computed from has changed.

The pre-commit case checks the same few files again and again: with their facts cached, the run
is mostly the import of the analysis and the rules (about 70 ms of a 120 ms run). An entry here
holds the rendered output and the exit code of one command line in one folder, keyed by
everything the command re-derives before it reads a model file (the options, the discovered
files, the output format, the package and the interpreter), and stands while every file and
folder the run read, looked for or listed (`inputs`) has its stamp, as ruff's cache trusts a
file's stamp. A warm run then imports neither the analysis nor the rules.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__, cachedir, inputs

if TYPE_CHECKING:
    from .config import Options

KEPT = 64
"""Entries kept: past it, writing one removes the oldest (each commit's pre-commit run names
other files, so each is a key of its own)."""
PACKAGE = Path(__file__).parent


@dataclass(frozen=True)
class Entry:
    output: str
    code: int
    """The exit code before `--exit-zero` (which only turns 1 into 0)."""
    stamps: dict[str, inputs.Stamp]


def key(options: Options, files: list[Path], paths: list[Path], shown: tuple) -> str:
    """The entry's name: the options that shape the result (not where each came from), the
    files discovery found, the paths given, how the output is shown (format, verbosity), the
    folder the run is in, what imports search, and the package and interpreter that run."""
    digest = hashlib.sha256()
    chosen = tuple((f.name, getattr(options, f.name)) for f in fields(options) if f.name not in ("sources", "jobs"))
    for part in (__version__, sys.version, _package(), os.getcwd(), sys.path, chosen, paths, files, shown):
        digest.update(repr(part).encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _package() -> list[tuple[str, int, int]]:
    """The name, size and modification time of each source file of the package: an edited or
    reinstalled contractfix never reads an old output."""
    found = []
    folders = [PACKAGE]
    while folders:
        folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    folders.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    info = entry.stat()
                    found.append((entry.path, info.st_size, info.st_mtime_ns))
    return sorted(found)


def folder(cache_folder: Path) -> Path:
    return cache_folder / "results"


def get(cache_folder: Path, name: str) -> Entry | None:
    """The entry `name`, if it is there and every input still has its stamp."""
    found = cachedir.load(folder(cache_folder) / name)
    if not isinstance(found, Entry) or not inputs.unchanged(found.stamps):
        return None
    return found


def put(cache_folder: Path, name: str, entry: Entry) -> None:
    """Store `entry`, and remove the oldest past `KEPT`; a folder that cannot be written is left as it is."""
    where = folder(cache_folder)
    try:
        cachedir.store(where, name, pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL))
        with os.scandir(where) as listed:
            kept = sorted((e for e in listed if not e.name.endswith(".tmp")), key=lambda e: e.stat().st_mtime_ns)
        for old in kept[:-KEPT]:
            os.unlink(old.path)
    except OSError:
        return
