"""The sweep's throwaway worktree: where it lives, the lock that marks it live, and clean-up after killed runs.

Each sweep makes a folder under the repository's common git dir and holds an exclusive `flock` on it
for as long as it runs; the worktree is `<folder>/tree` and its lock reason names the folder. A folder
whose lock can be taken belongs to a dead run, whatever its PID said: the lock is held by the open
file, so it works across PID namespaces (containers sharing the checkout) and dies with the process.

Nothing is deleted that a sweep did not make: the common folder must be a real folder of this user's
(never a symbolic link, which would lead the clean-up into someone's data), and a run's folder counts
as a sweep's only when it holds the mark its run wrote once it held the lock, as git marks a worktree
by its `gitdir` file. Anything else there is left alone and named in a note.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import git

from .gitops import NO_HOOKS, GitError, error_text, worktrees

FOLDER = "contractfix-sweep"
REASON = "contractfix sweep folder "
FULL_CHECKOUT = ("core.sparseCheckout=false", "core.sparseCheckoutCone=false")
MARK = ".contractfix-sweep"
MARK_TEXT = b"made by contractfix sweep\n"


def _root(repo: git.Repo) -> Path:
    """The folder that holds the runs' folders, refused (GitError) when it is not what sweep makes."""
    root = Path(repo.common_dir) / FOLDER
    with suppress(FileNotFoundError):
        _check(root)
    return root


def _check(root: Path) -> None:
    """Raise GitError unless `root` is a real folder that this user owns and may write."""
    try:
        info = root.lstat()
    except FileNotFoundError:
        raise
    except OSError as error:
        raise GitError(f"cannot use {root}: {error.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symbolic link"
    elif not stat.S_ISDIR(info.st_mode):
        problem = "is not a folder"
    elif info.st_uid != os.geteuid():
        problem = f"belongs to another user (uid {info.st_uid})"
    elif info.st_mode & 0o700 != 0o700:
        problem = f"is not writable by its owner (mode {stat.S_IMODE(info.st_mode):o})"
    else:
        return
    raise GitError(f"{root} {problem}: sweep keeps its worktrees in a folder of its own there and "
                   "touched nothing; move it aside")


@contextmanager
def worktree(repo: git.Repo, commit: str) -> Iterator[git.Repo]:
    """A detached worktree at `commit` holding the whole commit (sparse checkout off), removed on
    every exit (SIGTERM and Ctrl-C too). Hooks are off in it and LFS files stay pointers: nothing of
    the repo's own runs here."""
    with _terminate_as_interrupt():
        folder, lock = _claim(_root(repo))
        try:
            path = folder / "tree"
            options = {"c": [NO_HOOKS, *FULL_CHECKOUT]}
            try:
                repo.git(**options).worktree(
                    "add", "--detach", "--lock", "--reason", REASON + folder.name, str(path), commit,
                    env={"GIT_LFS_SKIP_SMUDGE": "1"},
                )
            except git.GitCommandError as error:
                raise GitError(f"cannot check out {commit[:12]} in a temporary worktree: {error_text(error)}") from None
            tree_repo = git.Repo(path)
            tree_repo.git.set_persistent_git_options(**options)
            yield tree_repo
        finally:
            _remove(repo, folder)
            os.close(lock)
            with suppress(OSError):
                folder.parent.rmdir()


def remove_stale(repo: git.Repo) -> list[str]:
    """Remove what killed sweeps left (worktrees and their folders); return a note on each worktree
    removed and on each thing found there that no sweep made (left as it was)."""
    root = _root(repo)
    notes = []
    for folder in _folders(root):
        if not _marked(folder):
            notes.append(f"left {folder} alone: contractfix sweep did not make it")
            continue
        lock = _lock(folder)
        if lock is None:
            continue
        try:
            _remove(repo, folder)
        finally:
            os.close(lock)
        notes.append(f"removed the stale worktree {folder / 'tree'}")
    registered = worktrees(repo)
    live = {p.name for p in _folders(root)}  # listed after: a folder is made before its worktree
    for path, _, reason in registered:
        name = reason[len(REASON):] if reason and reason.startswith(REASON) else None
        if name and name not in live and _is_tree_of(root, name, path):
            _unregister(repo, path)
    return notes


def _folders(root: Path) -> list[Path]:
    try:
        return sorted(root.iterdir())
    except FileNotFoundError:
        return []


def _marked(folder: Path) -> bool:
    """Whether `folder` is a real folder holding the mark a sweep writes in its own folders."""
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return False
        fd = os.open(folder / MARK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(MARK_TEXT) + 1) == MARK_TEXT
    finally:
        os.close(fd)


def _is_tree_of(root: Path, name: str, path: Path) -> bool:
    """Whether a worktree registered for the run folder `name` is where that run put it: a lock
    reason alone (anyone can write one) never gets a worktree elsewhere removed."""
    return os.path.realpath(path) == os.path.realpath(root / name / "tree")


def _claim(root: Path) -> tuple[Path, int]:
    """A new marked folder under `root`, and the descriptor holding its lock. `root` is removed when
    a sweep ends and leaves it empty, so it is made again as needed (and checked again once made).
    The mark is written under the lock: a marked folder whose lock is free belongs to a dead run."""
    while True:
        try:
            root.mkdir(mode=0o700, exist_ok=True)
            _check(root)
            folder = Path(tempfile.mkdtemp(dir=root))
        except FileNotFoundError:
            continue
        except OSError as error:
            raise GitError(f"cannot make the sweep's worktree folder in {root}: {error.strerror}") from None
        lock = _lock(folder)
        if lock is None:
            continue
        try:
            mark = os.open(folder / MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(mark, "wb") as handle:
                handle.write(MARK_TEXT)
        except OSError as error:
            os.close(lock)
            shutil.rmtree(folder, ignore_errors=True)
            raise GitError(f"cannot mark the sweep's worktree folder {folder}: {error.strerror}") from None
        return folder, lock


def _lock(folder: Path) -> int | None:
    """An exclusive lock on `folder`, or None when a live run holds it or it is gone."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(folder).st_ino == os.fstat(fd).st_ino:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _remove(repo: git.Repo, folder: Path) -> None:
    """Unregister the worktree made in `folder` and delete the folder (with the lock still held)."""
    for path, _, reason in worktrees(repo):
        if reason == REASON + folder.name:
            _unregister(repo, path)
    shutil.rmtree(folder, ignore_errors=True)
    repo.git.worktree("prune")


def _unregister(repo: git.Repo, path: Path) -> None:
    repo.git.worktree("unlock", str(path), with_exceptions=False)
    repo.git.worktree("remove", "--force", str(path), with_exceptions=False)
    repo.git.worktree("prune")


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
