"""Run a command in its own process group, with a timeout; leave no process of it behind."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

GRACE_S = 5.0
"""How long a group gets to exit after SIGTERM before it is SIGKILLed."""
STOP: ContextVar[threading.Event | None] = ContextVar("STOP", default=None)
"""Set in a thread that runs commands on the main thread's behalf: once the event is set, its run
ends as a Ctrl-C would end it (which reaches the main thread only; each group has its own session)."""
POLL_S = 0.1


@dataclass(frozen=True)
class Completed:
    """The outcome of one run. `returncode` is None when the run was killed on timeout."""

    cmd: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool

    def tail(self, lines: int = 20) -> str:
        """The last lines of stderr (or stdout when stderr is empty): an error excerpt."""
        text = self.stderr.strip() or self.stdout.strip()
        return "\n".join(text.splitlines()[-lines:])


def run(
    cmd: Sequence[str | Path],
    *,
    timeout: float | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    grace: float = GRACE_S,
) -> Completed:
    """Run `cmd` as the leader of a new process group and wait for it, at most `timeout` seconds.

    Whatever happens (normal exit, timeout, Ctrl-C or any other exception while waiting), the
    whole group is terminated before returning or re-raising: grandchildren such as vLLM
    workers do not outlive the run. Output goes through temporary files, so a grandchild that
    keeps a pipe open cannot block us.
    """
    args = tuple(str(c) for c in cmd)
    stop = STOP.get()
    if stop is not None and stop.is_set():
        raise KeyboardInterrupt
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
        timed_out = False
        try:
            _wait(proc, timeout, stop)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            terminate_group(proc, grace)
        duration = time.monotonic() - start
        return Completed(
            cmd=args,
            returncode=None if timed_out else proc.returncode,
            stdout=_read(out),
            stderr=_read(err),
            duration_s=duration,
            timed_out=timed_out,
        )


def _wait(proc: subprocess.Popen, timeout: float | None, stop: threading.Event | None) -> None:
    """`proc.wait(timeout)`; with `stop`, a KeyboardInterrupt once it is set."""
    if stop is None:
        proc.wait(timeout=timeout)
        return
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if stop.is_set():
            raise KeyboardInterrupt
        left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
        try:
            proc.wait(timeout=max(left, 0))
            return
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                raise


def terminate_group(proc: subprocess.Popen, grace: float = GRACE_S) -> None:
    """SIGTERM the process group led by `proc`, SIGKILL what is left after `grace`, reap `proc`."""
    pgid = proc.pid
    if not _signal_group(pgid, signal.SIGTERM):
        _reap(proc, grace)
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            return
        time.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    _reap(proc, grace)


def _reap(proc: subprocess.Popen, grace: float) -> None:
    """Wait for `proc`. A Ctrl-C that lands in `Popen.wait` just after it takes its internal lock
    leaves the lock held (CPython takes it before the `try` that releases it), and a plain
    `proc.wait()` then blocks forever; a wait with a timeout never blocks on the lock, and past
    it the child is reaped by its pid."""
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            _, status = os.waitpid(proc.pid, 0)
        except ChildProcessError:
            return
        proc.returncode = os.waitstatus_to_exitcode(status)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def _group_alive(pgid: int) -> bool:
    return _signal_group(pgid, 0)


def _read(handle) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", errors="replace")
