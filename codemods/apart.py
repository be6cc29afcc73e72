"""Work done in a forked child while this process does the rest: the second core's share of the
rules, once the workers that parsed the tree are gone.

A child shares everything this process built (forked, nothing is pickled on the way in) and sends
back one pickled result through a pipe; its output goes nowhere, so that it never holds the
caller's pipe open when this process is killed. It is an optimisation only: where a fork is not
safe or not worth it (not Linux, one CPU, `--jobs 1`, other threads running) nothing starts, and a
child that fails for any reason gives None, so the caller does the work itself.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from .workers import pool_size

T = TypeVar("T")


class Child(Generic[T]):
    """A forked child computing one result. Use as a context manager: leaving it stops a child
    whose result was never read (this process raised meanwhile)."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.reaped = False

    def __enter__(self) -> Child[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.reaped:
            os.kill(self.pid, signal.SIGKILL)
            os.close(self.fd)
            os.waitpid(self.pid, 0)
            self.reaped = True

    def result(self) -> T | None:
        """The child's result, once it is done; None when it failed or sent nothing readable."""
        try:
            with os.fdopen(self.fd, "rb") as pipe:
                data = pipe.read()
        finally:
            os.waitpid(self.pid, 0)
            self.reaped = True
        try:
            done, value = pickle.loads(data)
        except Exception:  # killed before it wrote, or wrote half: do the work here
            return None
        return value if done else None


class Shares:
    """A list of tasks that this process and a child take from either end: the child from the
    front, this process from the back once its own work is done, so that neither waits for the
    other while work is left. Each task is marked taken in memory both processes share (set up
    before the fork). Where both reach the last task at once, both may do it: a task here is
    pure, so the two results are the same."""

    def __init__(self, count: int) -> None:
        self.taken = mmap.mmap(-1, max(count, 1))

    def take(self, task: int) -> bool:
        """Whether `task` was free: it is taken from now on."""
        if self.taken[task]:
            return False
        self.taken[task] = 1
        return True


def start(work: Callable[[], T], jobs: int) -> Child[T] | None:
    """Run `work` in a forked child; None when no child is started (do the work here)."""
    if not sys.platform.startswith("linux") or pool_size(jobs, 2) < 2 or threading.active_count() > 1:
        return None
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return Child(pid, read)
    try:
        _serve(work, read, write)
    finally:
        os._exit(0)  # whatever happened, the child never returns into the caller's code


def _serve(work: Callable[[], object], read: int, write: int) -> None:
    """In the child: run `work` and write its result, pickled, to `write`."""
    os.close(read)
    quiet = os.open(os.devnull, os.O_WRONLY)
    for stream in (1, 2):  # nothing to say, and the caller's pipe must end with this process
        os.dup2(quiet, stream)
    try:
        data = pickle.dumps((True, work()), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # the parent does the work itself, and meets the error there
        data = pickle.dumps((False, None))
    with os.fdopen(write, "wb") as pipe:
        pipe.write(data)
