"""The sweep's throwaway worktree: where it lives, the lock that marks it live, and clean-up after killed runs.

Each sweep makes a folder under the repository's common git dir and holds an exclusive `flock` on it
for as long as it runs; the worktree is `<folder>/tree` and its lock reason names the folder. A folder
whose lock can be taken belongs to a dead run, whatever its PID said: the lock is held by the open
file, so it works across PID namespaces (containers sharing the checkout) and dies with the process.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
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


def _root(repo: git.Repo) -> Path:
    return Path(repo.common_dir) / FOLDER


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


def remove_stale(repo: git.Repo) -> list[Path]:
    """Remove what killed sweeps left (worktrees and their folders); return the worktrees removed."""
    root = _root(repo)
    removed = []
    for folder in _folders(root):
        lock = _lock(folder)
        if lock is None:
            continue
        try:
            _remove(repo, folder)
        finally:
            os.close(lock)
        removed.append(folder / "tree")
    registered = worktrees(repo)
    live = {p.name for p in _folders(root)}  # listed after: a folder is made before its worktree
    for path, _, reason in registered:
        if reason and reason.startswith(REASON) and reason[len(REASON):] not in live:
            _unregister(repo, path)
    return removed


def _folders(root: Path) -> list[Path]:
    try:
        return sorted(root.iterdir())
    except FileNotFoundError:
        return []


def _claim(root: Path) -> tuple[Path, int]:
    """A new folder under `root`, and the descriptor holding its lock. `root` is removed when a
    sweep ends and leaves it empty, so it is made again as needed."""
    while True:
        root.mkdir(parents=True, exist_ok=True)
        try:
            folder = Path(tempfile.mkdtemp(dir=root))
        except FileNotFoundError:
            continue
        lock = _lock(folder)
        if lock is not None:
            return folder, lock


def _lock(folder: Path) -> int | None:
    """An exclusive lock on `folder`, or None when a live run holds it or it is gone."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
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
