"""The subprocess runner: output, timeout, and no process of the group left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from contractfix.smoke.runner import STOP, run, terminate_group

STAND_IN = textwrap.dedent(
    """
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(sys.argv[1], "w") as handle:
        handle.write(str(child.pid))
    print("started", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    if sys.argv[2] == "hang":
        signal_proof = __import__("signal")
        signal_proof.signal(signal_proof.SIGTERM, signal_proof.SIG_IGN)
        time.sleep(600)
    sys.exit(int(sys.argv[2]))
    """
)


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    """A harness stand-in: starts a grandchild that sleeps, writes its pid, then exits or hangs."""
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return script


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(") ")[1].startswith("Z"))


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_normal_exit_returns_output_and_reaps_the_group(stand_in: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    done = run([sys.executable, stand_in, pid_file, "3"], timeout=60)
    assert done.returncode == 3
    assert not done.timed_out
    assert done.stdout.strip() == "started"
    assert done.tail() == "to stderr"
    assert _wait_dead(int(pid_file.read_text())), "the grandchild outlived a normal exit"


def test_timeout_kills_the_whole_group_even_if_sigterm_is_ignored(stand_in: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    start = time.monotonic()
    done = run([sys.executable, stand_in, pid_file, "hang"], timeout=2, grace=1)
    assert done.timed_out
    assert done.returncode is None
    assert time.monotonic() - start < 15
    assert "started" in done.stdout
    assert _wait_dead(int(pid_file.read_text())), "the grandchild outlived the timeout"


def test_ctrl_c_kills_the_group_and_propagates(stand_in: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            run([sys.executable, stand_in, pid_file, "hang"], timeout=120, grace=1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert _wait_dead(int(pid_file.read_text())), "the grandchild outlived Ctrl-C"


def test_a_stop_ends_another_threads_run_as_ctrl_c_would(stand_in: Path, tmp_path: Path) -> None:
    """A Ctrl-C reaches the main thread only: a run in another thread ends when its STOP is set,
    its group killed, and a later run there does not start."""
    pid_file, stop, raised = tmp_path / "pid", threading.Event(), []

    def worker() -> None:
        STOP.set(stop)
        for _ in range(2):
            try:
                run([sys.executable, stand_in, pid_file, "hang"], timeout=120, grace=1)
            except KeyboardInterrupt:
                raised.append(time.monotonic())

    thread = threading.Thread(target=worker)
    thread.start()
    while not pid_file.exists():
        time.sleep(0.05)
    stopped = time.monotonic()
    stop.set()
    thread.join(30)
    assert not thread.is_alive() and len(raised) == 2 and raised[0] - stopped < 10
    assert _wait_dead(int(pid_file.read_text())), "the grandchild outlived the stop"
    assert STOP.get() is None, "this thread's runs are not stoppable"


def test_a_wait_lock_an_interrupt_left_held_does_not_hang_the_reap(stand_in: Path, tmp_path: Path) -> None:
    """A Ctrl-C between `Popen.wait`'s taking its internal lock and the `try` that releases it
    leaves the lock held (seen once in this suite: the run hung for good); the group is still
    killed and the child reaped."""
    pid_file = tmp_path / "pid"
    proc = subprocess.Popen([sys.executable, stand_in, pid_file, "hang"], stdout=subprocess.DEVNULL,
                            start_new_session=True)
    while not pid_file.exists():
        time.sleep(0.05)
    proc._waitpid_lock.acquire()  # what the interrupt leaves behind
    reaper = threading.Thread(target=terminate_group, args=(proc, 1), daemon=True)
    reaper.start()
    reaper.join(30)
    assert not reaper.is_alive(), "terminate_group hung on the held lock"
    assert proc.returncode is not None
    assert _wait_dead(int(pid_file.read_text())), "the grandchild outlived the reap"


def test_the_child_leads_its_own_process_group(tmp_path: Path) -> None:
    code = f"import os; print(os.getpgid(0) == os.getpid(), os.getpgid(0) != {os.getpgid(0)})"
    done = run([sys.executable, "-c", code], timeout=30)
    assert done.stdout.split() == ["True", "True"]
