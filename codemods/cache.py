"""Content-hash cache of per-file facts, outside the source tree (like ruff's).

An entry is keyed by the file's bytes, its module name, and a fingerprint of every source file
the facts depend on (the whole `analysis` package and `DEPENDENCIES`), taken when this module is
imported, so a changed file or a changed analyzer never reads a stale entry. The path is not part
of the key (a sweep's worktree moves every run): facts read back get the path they are asked for.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
from pathlib import Path

from . import cachedir, facts
from .analysis import needs

PACKAGE = Path(__file__).resolve().parent
DEPENDENCIES = (
    "aliases.py", "facts.py", "families/__init__.py", "families/base.py", "unparse.py", "vllm_names.py", "walk.py",
)
"""Modules outside `analysis/` and the families' facts that the facts depend on; a test checks
this against the imports."""


def sources(package: Path = PACKAGE) -> list[Path]:
    """Every source file the facts depend on: each module of `analysis/`, each family's
    `__init__.py` and `facts/` modules, and `DEPENDENCIES`."""
    families = package / "families"
    return [
        *sorted((package / "analysis").rglob("*.py")),
        *sorted(families.glob("*/__init__.py")),
        *sorted(families.glob("*/facts/*.py")),
        *(package / name for name in DEPENDENCIES),
    ]


def fingerprint(package: Path = PACKAGE) -> bytes:
    """A digest of the names and bytes of `sources(package)`."""
    digest = hashlib.sha256()
    for path in sources(package):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.digest()


FINGERPRINT = fingerprint()


class FactsCache:
    """Get and put `ModuleFacts` by content; a folder that cannot be used disables the cache."""

    def __init__(self, folder: Path | None, salt: bytes | None = None) -> None:
        self.folder = folder
        self._salt = FINGERPRINT + needs.digest() if salt is None else salt

    def key(self, data: bytes, module: str, kind: str = "") -> str:
        """Of the facts of `kind` ("": a target's) read from `data` as module `module`."""
        digest = hashlib.sha256(self._salt)
        digest.update(kind.encode() + b"\0")
        digest.update(module.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def has(self, key: str) -> bool:
        """Whether an entry for `key` is there (`get` can still miss, if it cannot be read)."""
        if self.folder is None:
            return False
        try:
            return stat.S_ISREG(os.stat(self.folder / key[:2] / key).st_mode)
        except OSError:
            return False

    def get(self, key: str, path: str) -> facts.ModuleFacts | None:
        """The cached facts for `key`, as facts of the file at `path`; None on any miss."""
        if self.folder is None:
            return None
        found = cachedir.load(self.folder / key[:2] / key)
        if not isinstance(found, facts.ModuleFacts):
            return None
        found.path = path
        return found

    def put(self, key: str, value: facts.ModuleFacts) -> None:
        if self.folder is not None:
            self.write(key, dumps(value))

    def write(self, key: str, entry: bytes) -> None:
        """Store an entry already pickled (`dumps`): a worker process stores the facts it sends."""
        if self.folder is None:
            return
        try:
            cachedir.store(self.folder / key[:2], key, entry)
        except OSError:
            self.folder = None


def dumps(value: facts.ModuleFacts) -> bytes:
    """A cache entry's bytes."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
