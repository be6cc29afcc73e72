"""Content-hash cache of per-file facts, outside the source tree (like ruff's).

An entry is keyed by the file's bytes, its path and module name, and a fingerprint of the
analyzer's own source, so a changed file or a changed analyzer never reads a stale entry.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from . import analyze, facts

ENV = "CONTRACTFIX_CACHE_DIR"


def default_folder() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "contractfix" / "facts"


def _fingerprint() -> bytes:
    digest = hashlib.sha256()
    for module in (analyze, facts):
        digest.update(Path(module.__file__).read_bytes())
    return digest.digest()


class FactsCache:
    """Get and put `ModuleFacts` by content; a folder that cannot be used disables the cache."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._salt = _fingerprint() if folder else b""

    def key(self, data: bytes, path: str, module: str) -> str:
        digest = hashlib.sha256(self._salt)
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0" + module.encode() + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def get(self, key: str) -> facts.ModuleFacts | None:
        if self.folder is None:
            return None
        try:
            with open(self.folder / key[:2] / key, "rb") as handle:
                return pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
            return None

    def put(self, key: str, value: facts.ModuleFacts) -> None:
        if self.folder is None:
            return
        folder = self.folder / key[:2]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, folder / key)
        except OSError:
            self.folder = None
