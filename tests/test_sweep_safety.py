"""`sweep` safety: clear errors with nothing changed, and no worktree left behind on any exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import git as gitpython
import pytest

from contractfix.git import GitError
from contractfix.sweep import DEFAULT_BRANCH, SweepRequest, sweep
from tests.gitrepo import checkout_state

pytestmark = pytest.mark.usefixtures("git_env")
ROOT = Path(__file__).resolve().parents[1]


def refs(repo: gitpython.Repo) -> str:
    return repo.git.for_each_ref()


def worktree_count(repo: gitpython.Repo) -> int:
    return repo.git.worktree("list", "--porcelain").count("worktree ")


@pytest.mark.parametrize(
    "given, message",
    [
        ({"branch": "bad..name"}, "not a valid branch name"),
        ({"branch": "with space"}, "not a valid branch name"),
        ({"branch": "main"}, "is checked out in"),
        ({"branch": "main/fixes"}, "branch 'main' exists"),
        ({"branch": "contractfix"}, "exists below it"),
        ({"base": "no-such-ref"}, "does not name a commit"),
        ({"author": "nobody"}, "--author must look like"),
        ({"push": "/no/such/remote.git"}, "cannot read remote"),
    ],
)
def test_bad_requests_fail_clearly_and_change_nothing(repo, given, message):
    repo.create_head("contractfix/other")
    state, before = checkout_state(repo), refs(repo)
    with pytest.raises(GitError, match=message):
        sweep(SweepRequest(repo=Path(repo.working_tree_dir), **given))
    assert (checkout_state(repo), refs(repo)) == (state, before)
    assert worktree_count(repo) == 1


@pytest.mark.parametrize(
    "given, message",
    [
        ({"commit_per": "file"}, "--commit-per must be one of"),
        ({"open_pr": True}, "--open-pr needs --push"),
        ({"smoke": "heavy"}, "unknown tier 'heavy'"),
    ],
)
def test_bad_values_are_refused_before_anything_runs(tmp_path, given, message):
    with pytest.raises(ValueError, match=message):
        sweep(SweepRequest(repo=tmp_path / "not-even-a-repo", **given))


def test_not_a_repository(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitError, match="not inside a git repository"):
        sweep(SweepRequest(repo=tmp_path / "plain"))
    with pytest.raises(GitError, match="no such file"):
        sweep(SweepRequest(repo=tmp_path / "missing"))


def test_bare_repository(tmp_path):
    gitpython.Repo.init(tmp_path / "bare.git", bare=True)
    with pytest.raises(GitError, match="bare repository"):
        sweep(SweepRequest(repo=tmp_path / "bare.git"))


def test_repository_without_commits(tmp_path):
    repo = gitpython.Repo.init(tmp_path / "empty")
    with pytest.raises(GitError, match="no commits yet"):
        sweep(SweepRequest(repo=tmp_path / "empty"))
    assert not repo.head.is_valid()


RUNNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from contractfix import engine, sweep

    def stalled(paths, options, write=True):
        Path(sys.argv[2] + ".tmp").write_text(str(paths[0]))
        Path(sys.argv[2] + ".tmp").rename(sys.argv[2])
        time.sleep(60)

    engine.fix = stalled
    sweep.sweep(sweep.SweepRequest(repo=Path(sys.argv[1])))
    """
)


def start_stalled_sweep(repo: gitpython.Repo, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A real sweep process stopped inside its worktree; returns it and the worktree path."""
    marker = tmp_path / "inside"
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, repo.working_tree_dir, str(marker)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "sweep did not reach its worktree"
        time.sleep(0.05)
    return proc, Path(marker.read_text())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_worktree_removed_when_interrupted(repo, tmp_path, signum):
    proc, tree = start_stalled_sweep(repo, tmp_path)
    assert tree.is_dir() and worktree_count(repo) == 2
    proc.send_signal(signum)
    assert proc.wait(timeout=30) != 0
    assert not tree.exists() and not tree.parent.exists()
    assert worktree_count(repo) == 1
    assert DEFAULT_BRANCH not in repo.heads


def test_stale_worktree_of_a_killed_run_is_cleaned_up(repo, tmp_path):
    proc, tree = start_stalled_sweep(repo, tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    assert tree.is_dir() and worktree_count(repo) == 2
    result = sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
    assert any(str(tree) in note for note in result.notes)
    assert not tree.parent.exists() and worktree_count(repo) == 1
    assert result.status == "created"


def test_worktree_of_a_live_run_is_left_alone(repo, tmp_path):
    proc, tree = start_stalled_sweep(repo, tmp_path)
    try:
        result = sweep(SweepRequest(repo=Path(repo.working_tree_dir), branch="contractfix/second"))
        assert tree.is_dir() and not any("stale" in n for n in result.notes)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert worktree_count(repo) == 1
