"""Progress bars: drawn on stderr only when it is a terminal, never in pipes or logs."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from contractfix import engine, progress
from contractfix.config import Options
from contractfix.demo import copy_example


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "repo")


def test_a_terminal_shows_files_scanned_and_fixed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setenv("TERM", "xterm")
    with progress.shown():
        report = engine.fix([tree], Options(jobs=1, cache=False), write=False)
    assert report.changes
    assert "files scanned" in screen.getvalue() and "files fixed" in screen.getvalue()


def test_the_bar_counts_the_files_the_summary_counts(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary's "N file(s) scanned" holds files that need no parse; so does the bar."""
    (tree / "README.txt").write_text("not Python\n")
    (tree / "notes.py").write_text("x = 1\n")  # read, but no rule's words: never parsed
    totals = []
    real_track = progress.track

    def track(items, description, total=None, done=0):
        totals.append((description, total))
        return real_track(items, description, total, done)

    monkeypatch.setattr(progress, "track", track)
    report = engine.check([tree], Options(jobs=1, cache=False))
    assert ("files scanned", report.files_scanned) in totals


@pytest.mark.parametrize("term", ["dumb", "pipe"])
def test_nothing_is_drawn_outside_a_terminal(tree: Path, monkeypatch: pytest.MonkeyPatch, term: str) -> None:
    screen = Terminal() if term == "dumb" else io.StringIO()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setenv("TERM", term)
    with progress.shown():
        assert engine.check([tree], Options(jobs=1)).findings
    assert screen.getvalue() == ""


def test_track_yields_every_item_with_or_without_a_display(monkeypatch: pytest.MonkeyPatch) -> None:
    assert list(progress.track(iter(range(5)), "items", 7, done=2)) == [0, 1, 2, 3, 4]
    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setenv("TERM", "xterm")
    with progress.shown():
        assert list(progress.track([1, 2, 3], "items")) == [1, 2, 3]
        with progress.task("a stage") as advance:
            advance()


def test_sweep_dry_run_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    """stderr on a real pseudo-terminal: the sweep's analysis draws its bar there."""
    import os
    import pty
    import subprocess

    from tests.gitrepo import example_repo

    repo = example_repo(tmp_path / "repo")
    leader, follower = pty.openpty()
    code = "import sys; from contractfix.cli import run; sys.argv[0] = 'contractfix'; run()"
    env = {**os.environ, "TERM": "xterm", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path),
           "CONTRACTFIX_CACHE_DIR": str(tmp_path / "facts")}
    done = subprocess.run([sys.executable, "-c", code, "sweep", "--dry-run", "."],
                          cwd=repo.working_tree_dir, stdout=subprocess.PIPE, stderr=follower, env=env, timeout=120)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    assert done.returncode == 0, done.stdout
    assert b"files scanned" in drawn and b"would fix 2 file(s)" in done.stdout
