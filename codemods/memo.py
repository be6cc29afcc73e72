"""What a run reads from files it does not analyze, kept between runs by each file's stat.

A check of one file still reads vLLM's registry and scans the class headers of every registered
module for subclasses of its classes: about 400 files, several times the work of the check. The
facts cache is keyed by content, which would mean reading them all again; this memo is keyed, as
ruff's cache is, by each file's modification time, change time, size and inode, so a warm run
reads one small file instead. A value is stored only once computed from the file's bytes, and the
memo's name carries a digest of the module that computes it, so a changed computation never reads
an old value.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from . import cachedir, inputs

T = TypeVar("T")
P = TypeVar("P", str, Path)
R = TypeVar("R")
KEPT = 20_000
"""The most values a memo keeps: past it, a write keeps only those this run used (a sweep's
worktree moves every run, and each run would add every file of its tree)."""
Stamp = tuple[int, int, int, int]


class Memo(Generic[T]):
    """Values computed from files' bytes, by path, valid while the file's stamp is unchanged.
    `folder` None (no cache) keeps them for this run alone."""

    def __init__(self, folder: Path | None, name: str, computed_by: str) -> None:
        self.folder = folder
        self.name = name
        self.computed_by = computed_by
        self.file: Path | None = None
        self.values: dict[str, tuple[Stamp, T]] | None = None
        self.used: set[str] = set()
        self.changed = False
        self.unsettled: set[str] = set()
        """Files changed too shortly before their value was computed to keep it (`inputs.settled`)."""

    def _load(self) -> dict[str, tuple[Stamp, T]]:
        """The stored values, read on first use: a run that needs none never opens the file."""
        self.values = {}
        if self.folder is None:
            return self.values
        digest = hashlib.sha256(Path(self.computed_by).read_bytes()).hexdigest()[:16]
        self.file = self.folder / "memo" / f"{self.name}-{digest}.pickle"
        loaded = cachedir.load(self.file)
        self.values = loaded if isinstance(loaded, dict) else {}
        return self.values

    def get(self, path: P, compute: Callable[[R], T], read: Callable[[P], R]) -> T:
        """`compute(read(path))`, or the value stored for the file as it is now. Raises what
        `os.stat`, `read` and `compute` raise; nothing is stored then."""
        return self.lookup(path, compute, read)[0]

    def lookup(self, path: P, compute: Callable[[R], T], read: Callable[[P], R]) -> tuple[T, R] | tuple[T, None]:
        """`get`, with what `read` gave where the file had to be read (None where the stored
        value answered): a caller that needs the bytes for some answers reads them once. A file
        is stored under its absolute path, the same whatever folder a run starts in."""
        inputs.note(path)  # a stored value answers without a read that `inputs` would see
        looked = time.time_ns()
        info = os.stat(path)
        stamp = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
        key = os.path.abspath(path)
        values = self._load() if self.values is None else self.values
        self.used.add(key)
        known = values.get(key)
        if known is not None and known[0] == stamp:
            return known[1], None
        data = read(path)
        value = compute(data)
        values[key] = (stamp, value)
        self.changed = True
        if not inputs.settled(stamp, looked):
            self.unsettled.add(key)  # this run's answer; the next computes it again
        return value, data

    def flush(self) -> None:
        """Write the memo if it changed; a folder that cannot be written is left as it is."""
        if self.file is None or self.values is None or not self.changed:
            return
        if len(self.values) > KEPT:
            self.values = {key: self.values[key] for key in self.used if key in self.values}
        kept = {key: value for key, value in self.values.items() if key not in self.unsettled}
        try:
            cachedir.store(self.file.parent, self.file.name, pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL))
            self.changed = False
        except OSError:
            return
