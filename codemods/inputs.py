"""What a check's result was computed from: every file it read or looked for, and every folder
it listed, each with its stamp (modification time, change time, size and inode, or None where
nothing was there), so that a later run can tell the result still stands (`results`).

Reads and listings are seen through the interpreter's audit events (`open`, `os.listdir`,
`os.scandir`), so that no reader can be forgotten; a failed `open` counts too, as a file looked
for. A test of a path's existence or type raises no event, so the places that test one do it
through `is_file` and `is_dir`, or say so with `note`. Nothing is recorded outside `recorded()`:
`note` is then a test of a global.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

Stamp = tuple[int, int, int, int] | None
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})


class Inputs:
    """Paths and their stamps as the run first saw them; paths under a folder of `skipped` (the
    caches, keyed by content; the package, which keys the results) are left out, as given or
    with links resolved."""

    def __init__(self, skipped: Iterable[str | os.PathLike] = ()) -> None:
        self.stamps: dict[str, Stamp] = {}
        self.skipped = tuple({os.path.join(f(s), "") for s in skipped for f in (os.path.abspath, os.path.realpath)})

    def note(self, path: str | bytes | os.PathLike) -> None:
        key = os.path.abspath(os.fsdecode(path))
        if key not in self.stamps and not key.startswith(self.skipped):
            self.stamps[key] = stamp(key)

    def merge(self, stamps: dict[str, Stamp]) -> None:
        """Add what another process saw (a forked child's rules), where this one saw nothing."""
        for key, value in stamps.items():
            self.stamps.setdefault(key, value)


def stamp(path: str) -> Stamp:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino


SETTLED_NS = 2 * 10**9
"""How long before a run a file must have last changed for an answer read from it to be kept
by its stamp: a file system that keeps whole seconds (ext3, HFS+; FAT two) gives an edit made
in the same tick as the run the stamp the run saw. git's index meets the same race ("racily
clean" entries) and treats those files as changed."""


def settled(stamp: Stamp, since_ns: int) -> bool:
    """Whether `stamp`'s last change (its ctime, which every change moves) is older than
    `SETTLED_NS` before `since_ns`: a later edit cannot then leave the stamp as it is."""
    return stamp is None or since_ns - stamp[1] > SETTLED_NS


def unchanged(stamps: dict[str, Stamp]) -> bool:
    """Whether every path still has the stamp it was recorded with (None: still nothing there)."""
    return all(stamp(path) == value for path, value in stamps.items())


_recording: Inputs | None = None
_hooked = False


def note(path: str | bytes | os.PathLike) -> None:
    """Record a path whose existence or type the run tests (reads are seen without this)."""
    if _recording is not None:
        _recording.note(path)


def is_file(path: Path) -> bool:
    """`path.is_file()`, the path recorded as looked for."""
    note(path)
    return path.is_file()


def is_dir(path: Path) -> bool:
    """`path.is_dir()`, the path recorded as looked for."""
    note(path)
    return path.is_dir()


def note_search_path() -> None:
    """Record the folders imports search (`sys.path`): an installed or removed package (vLLM, a
    plugin's distribution) changes the stamp of the folder that holds it."""
    if _recording is not None:
        for folder in sys.path:
            if folder:
                _recording.note(folder)


@contextmanager
def recorded(skipped: Iterable[str | os.PathLike] = ()) -> Iterator[Inputs]:
    """Record what runs inside this block (a forked child keeps recording into its own copy)."""
    global _recording, _hooked
    if not _hooked:
        sys.addaudithook(_audit)  # cannot be removed: outside a block it returns at once
        _hooked = True
    inputs = Inputs(skipped)
    previous, _recording = _recording, inputs
    try:
        yield inputs
    finally:
        _recording = previous


def recording() -> dict[str, Stamp] | None:
    """The stamps recorded so far in this process (None when nothing records): what a forked
    child hands back."""
    return None if _recording is None else _recording.stamps


def merge(stamps: dict[str, Stamp] | None) -> None:
    """Add what a forked child recorded to what this process records."""
    if _recording is not None and stamps:
        _recording.merge(stamps)


def _audit(event: str, args: tuple) -> None:
    if _recording is None or event not in _EVENTS:
        return
    path = args[0]
    if event == "open":
        mode, flags = args[1], args[2]
        if isinstance(path, int) or (mode is not None and any(c in mode for c in "wax+")) or flags & _WRITES:
            return
    elif path is None:
        path = "."
    elif isinstance(path, int):
        return
    _recording.note(path)
