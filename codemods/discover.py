"""Find the Python files a run looks at, and skip cheaply those that cannot matter."""

from __future__ import annotations

import errno
import hashlib
import io
import mmap
import os
import re
import stat
import subprocess
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .config import Glob
from .findings import FileError
from .memo import Memo
from .vllm_names import PARAM, PP_INTERFACE, PRODUCER, TENSORS_CLASS

MARKERS = (PARAM.encode(), TENSORS_CLASS.encode(), PP_INTERFACE.encode())
DEFINES = (b"def forward", PRODUCER.encode())
SKIPS_INIT = (b".__init__(self", b", self).__init__(")
INIT_CALL = b"__init__("
"""Part of both of `SKIPS_INIT`: a file without it has neither (most files: one search, not two)."""
ENGINE_CONFIG = b"vllm_config"
CONFIG_IMPORT = re.compile(rb"from\s+(\w+)\.config\b")
SHARED = b"ntermediate"
"""Part of two of `MARKERS`: a file without it has neither."""
LOADS = (b"def load_weights", b"named_parameters")
"""A weight loader over the parameter dict (PP008): both must occur."""
SKIP_DIRS = {"__pycache__", ".git", ".hg", ".venv", "venv", ".tox", "node_modules", ".mypy_cache"}
MAX_SOURCE_BYTES = 8 * 2**20
"""Relevant files above this size (generated code) are skipped with an error, not parsed."""


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)


_SUBSTITUTES: dict[str, bytes] = {}
"""Paths whose content is given (standard input) rather than read from disk."""


@contextmanager
def substitute(path: Path, data: bytes) -> Iterator[None]:
    """Analyze `data` as the content of `path` (which need not exist) for the duration."""
    key = os.path.abspath(path)
    _SUBSTITUTES[key] = data
    try:
        yield
    finally:
        del _SUBSTITUTES[key]


def discover(paths: list[Path], exclude: tuple[Glob, ...] = ()) -> Discovery:
    """Every `.py` file under `paths` (not following directory links), minus `exclude` globs and,
    in a git repository, files git ignores (named files are taken as given)."""
    found = Discovery()
    seen: set[str] = set()
    cwd = os.getcwd()
    for path in paths:
        if os.path.abspath(path) in _SUBSTITUTES:
            candidates = [path]
        elif not path.exists() and not path.is_symlink():
            found.errors.append(FileError(path, "no such file or directory"))
            continue
        elif path.is_file() or path.is_symlink() and not path.is_dir():
            candidates = [path]
        elif path.is_dir():
            candidates = _unignored(list(_walk(path, found.errors)))
            if not candidates:
                found.errors.append(FileError(path, "no Python files found"))
        else:
            found.errors.append(FileError(path, "not a regular file or directory"))
            continue
        for file in candidates:
            key = os.path.join(cwd, file)  # `Path.absolute`, without its parsing of every part
            if key in seen or _excluded(file, exclude):
                continue
            seen.add(key)
            found.files.append(file)
    return found


def _walk(root: Path, errors: list[FileError]):
    def unlisted(error: OSError) -> None:
        errors.append(FileError(Path(error.filename or root), f"cannot list folder: {error.strerror}"))

    for folder, dirs, files in os.walk(root, onerror=unlisted, followlinks=False):
        dirs[:] = sorted(d for d in dirs if _walked(d))
        base = Path(folder)  # parsed once per folder, not once per file
        for name in sorted(files):
            if name.endswith(".py"):
                yield base / name


def regular_sources(root: Path) -> list[Path]:
    """Every `.py` file under `root` that is a regular file (no link), in the order of their
    paths, the folders discovery skips left out: a walk by directory entries, which know their
    type without a `stat` each (`Path.rglob` with a test of each file took 60 ms on vLLM's tree,
    and walked a checkout's `.venv` and `.git` too). A folder that cannot be listed is left out."""
    found: list[Path] = []
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if _walked(entry.name):
                            folders.append(folder / entry.name)
                    elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                        found.append(folder / entry.name)
        except OSError:
            continue
    return sorted(found)


def _walked(folder: str) -> bool:
    """Whether a walk goes into a folder of this name: not a hidden, cache or environment one."""
    return folder not in SKIP_DIRS and not folder.startswith(".")


def _excluded(path: Path, patterns: tuple[Glob, ...]) -> bool:
    return any(glob.matches(path) for glob in patterns)


GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


def _unignored(files: list[Path]) -> list[Path]:
    """`files` less those git ignores: in a git work tree only tracked files and untracked ones
    that no ignore rule matches are kept (each nested repository asked on its own); files outside
    any work tree are all kept."""
    roots: dict[str, str | None] = {}
    folders: dict[str, str | None] = {}  # a file's folder as given -> its work tree (asked once)
    groups: dict[str | None, list[Path]] = {}
    for file in files:
        folder = os.path.dirname(file)
        if folder not in folders:
            folders[folder] = _git_root(os.path.abspath(folder), roots)
        groups.setdefault(folders[folder], []).append(file)
    kept = groups.pop(None, [])
    for root, group in groups.items():
        listed = _listed(root) if root else None
        kept.extend(group if listed is None else [f for f in group if _physical(f) in listed])
    order = {id(f): n for n, f in enumerate(files)}
    return sorted(kept, key=lambda f: order[id(f)])


def _git_root(folder: str, cache: dict[str, str | None]) -> str | None:
    trail = []
    while folder not in cache:
        trail.append(folder)
        if os.path.exists(os.path.join(folder, ".git")):
            cache[folder] = folder
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            cache[folder] = None
            break
        folder = parent
    found = cache[folder]
    cache.update(dict.fromkeys(trail, found))
    return found


def _listed(root: str) -> set[str] | None:
    """Physical paths of the tracked and untracked-not-ignored `.py` files of the work tree at
    `root`; None when git cannot tell (not installed, not a work tree, unsafe ownership)."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_ENV}
    try:
        result = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.py"],
            capture_output=True, env=env, timeout=120, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode:
        return None
    top = os.path.realpath(root)
    return {os.path.join(top, os.fsdecode(name)) for name in result.stdout.split(b"\0") if name}


def _physical(file: Path) -> str:
    """The path with its folders' links resolved, the file's own name kept (a tracked link)."""
    absolute = os.path.abspath(file)
    return os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))


def contract_files(folder: Path | None) -> Memo[bool]:
    """Whether each file can take part in the contract (`relevant`), kept by its stat between
    runs in the cache `folder` (None: for this run only)."""
    from .families import files

    # named by a digest of what `relevant` searches for (and by this module's source): a changed
    # search never reads an old answer
    needles = repr((MARKERS, DEFINES, SKIPS_INIT, INIT_CALL, ENGINE_CONFIG, CONFIG_IMPORT.pattern, SHARED, LOADS, files()))
    return Memo(folder, f"contract-files-{hashlib.sha256(needles.encode()).hexdigest()[:16]}", __file__)


def read_source(path: Path, known: Memo[bool] | None = None) -> bytes | None:
    """The bytes of a file that can take part in the contract; None for one that cannot.

    Raises OSError, with a message fit for a report, for what is not a readable regular file
    (broken link, link loop, FIFO, device) and for a relevant file over `MAX_SOURCE_BYTES`.
    Opens without blocking, so a path swapped for a FIFO after discovery cannot hang the run.
    `known` (`contract_files`) answers for a file whose stat is unchanged since it was read: a
    file that cannot take part is then not read again (most of a vLLM tree, 80 ms of a warm
    check of 0.21.0's 1,781 files).
    """
    if known is None or os.path.abspath(path) in _SUBSTITUTES:
        return _read_source(path)
    try:
        takes_part, data = known.lookup(path, lambda data: data is not None, _read_source)
    except OSError:
        return _read_source(path)  # raises it again, as read without the memo (a broken link, say)
    if not takes_part:
        return None
    return data if data is not None else _read_source(path)


def _read_source(path: Path) -> bytes | None:
    given = _SUBSTITUTES.get(os.path.abspath(path))
    if given is not None:
        if not relevant(given):
            return None
        _check_decodes(given)
        return given
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(error.errno, "symbolic link loop") from None
        if error.errno == errno.ENOENT and path.is_symlink():
            raise OSError(error.errno, "broken symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file (a FIFO, socket or device); skipped")
        if info.st_size > MAX_SOURCE_BYTES:
            with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as view:
                if relevant(view):
                    raise OSError(0, f"too large to analyze ({info.st_size / 2**20:.1f} MB, "
                                     f"the limit is {MAX_SOURCE_BYTES // 2**20} MB); skipped")
            return None
        data = handle.read()
    if not relevant(data):
        return None
    _check_decodes(data)
    return data


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file, opened without blocking; OSError for anything else
    (a FIFO or device would otherwise hang the run)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        return handle.read()


def _check_decodes(data: bytes) -> None:
    """Refuse what Python itself refuses to run: null bytes, and bytes that are not in the file's
    declared encoding (UTF-8 unless a coding cookie says otherwise), even inside a comment."""
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise OSError(0, f"contains a null byte (line {line}) and Python would refuse it")
    try:
        encoding, problem = tokenize.detect_encoding(io.BytesIO(data).readline)[0], None
    except SyntaxError as error:
        encoding, problem = "utf-8", error
    try:
        data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise OSError(0, f"not valid {encoding} (byte 0x{data[error.start]:02x} on line {line}) and Python would refuse it") from None
    if problem:
        raise OSError(0, f"bad coding declaration ({problem})")


def relevant(source: bytes | mmap.mmap) -> bool:
    """Whether a file can hold a class under contract: one with a forward or a producer that
    names intermediate tensors, or a model (built from the engine's config) that calls a base's
    `__init__` by name and may skip the one that delegated, or a weight loader, or a file a
    family analyzed for asks for (`families.files`): a byte search, no parsing. Bases elsewhere load on demand."""
    from .families import files  # the families' facts: not for discovery alone (a reused check)

    # Most files match nothing, and each search that fails reads the whole file: the rarest
    # needle goes first, and one search for `ntermediate` stands for the two names that share it.
    shared = source.find(SHARED) >= 0
    named = any(source.find(m) >= 0 for m in MARKERS if shared or SHARED not in m) and any(
        source.find(d) >= 0 for d in DEFINES
    )
    skips = source.find(INIT_CALL) >= 0 and any(source.find(s) >= 0 for s in SKIPS_INIT) and engine_config(source)
    return named or skips or all(source.find(m) >= 0 for m in LOADS) or any(
        all(source.find(m) >= 0 for m in markers) for markers in files()
    )


def engine_config(source: bytes | mmap.mmap) -> bool:
    """Whether a source names the engine's config: `vllm_config`, or `<package>_config` in a fork
    that renamed the package and imports its config from `<package>.config` (aphrodite's
    `aphrodite_config`)."""
    return source.find(ENGINE_CONFIG) >= 0 or any(
        source.find(found.group(1) + b"_config") >= 0 for found in CONFIG_IMPORT.finditer(source)
    )
