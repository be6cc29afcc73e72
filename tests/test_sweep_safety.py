"""`sweep` safety: clear errors with nothing changed, and no worktree left behind on any exit."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import git as gitpython
import pytest

from contractfix import commit_message
from contractfix.gitops import GitError
from contractfix.sweep import DEFAULT_BRANCH, SweepRequest, sweep
from tests.gitrepo import GEMMA_LITE, HUMAN, STEP_LITE, TINY_LLAMA, checkout_state

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
    import signal, sys, time
    from pathlib import Path
    from contractfix import engine, sweep

    # Ctrl-C as a terminal delivers it: a test run started in the background (`cmd &`) hands its
    # children SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)

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
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)]))},
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


# People's work: the user's commit and index, a reviewer's amend, unpublished tags, a live sweep.

HOOK = """#!/bin/sh
exec {python} -c 'from pathlib import Path
from contractfix.sweep import SweepRequest, sweep
sweep(SweepRequest(repo=Path(".")))' >&2
"""


@pytest.mark.parametrize("all_tracked", [False, True], ids=["commit", "commit-a"])
def test_sweep_in_a_pre_commit_hook_leaves_the_users_commit_and_index_alone(repo, all_tracked):
    root = Path(repo.working_tree_dir)
    hook = root / ".git/hooks/pre-commit"
    hook.write_text(HOOK.format(python=sys.executable))
    hook.chmod(0o755)
    base = repo.head.commit.hexsha
    (root / "vllm/sequence.py").write_text((root / "vllm/sequence.py").read_text() + "# staged\n")
    repo.git.add("vllm/sequence.py")
    (root / TINY_LLAMA).write_text((root / TINY_LLAMA).read_text() + "# not staged\n")
    done = subprocess.run(["git", "commit", *(["-a"] if all_tracked else []), "-m", "mine"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    committed = sorted(repo.head.commit.stats.files)
    assert committed == (sorted(["vllm/sequence.py", TINY_LLAMA]) if all_tracked else ["vllm/sequence.py"])
    assert repo.git.status("--porcelain") == ("" if all_tracked else f" M {TINY_LLAMA}")
    swept = repo.heads[DEFAULT_BRANCH].commit
    assert [p.hexsha for p in swept.parents] == [base] and sorted(swept.stats.files) == [GEMMA_LITE, STEP_LITE]


def amend_on_the_branch(clone: gitpython.Repo) -> str:
    """What a reviewer does: check out the sweep's branch, edit, `git commit -a --amend --no-edit`."""
    clone.git.checkout(DEFAULT_BRANCH)
    path = Path(clone.working_tree_dir) / STEP_LITE
    path.write_text(path.read_text() + "# reviewer's change\n")
    clone.git.commit("-a", "--amend", "--no-edit", env=HUMAN.env())
    return clone.head.commit.hexsha


def test_a_reviewers_amend_of_the_sweeps_commit_is_refused(repo):
    sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
    amended = amend_on_the_branch(repo)
    assert commit_message.trailer() in repo.head.commit.message
    repo.git.checkout("main")
    with pytest.raises(GitError, match="not made by contractfix") as refused:
        sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
    assert amended[:12] in str(refused.value)
    assert repo.heads[DEFAULT_BRANCH].commit.hexsha == amended


def test_a_reviewers_amend_pushed_to_the_remote_is_refused(repo, remote, tmp_path):
    sweep(SweepRequest(repo=Path(repo.working_tree_dir), push=str(remote)))
    other = gitpython.Repo.clone_from(str(remote), tmp_path / "other", branch=DEFAULT_BRANCH)
    amended = amend_on_the_branch(other)
    other.git.push("--force", "origin", DEFAULT_BRANCH)
    with pytest.raises(GitError, match="not made by contractfix") as refused:
        sweep(SweepRequest(repo=Path(repo.working_tree_dir), push=str(remote)))
    assert amended[:12] in str(refused.value)
    assert gitpython.Repo(remote).heads[DEFAULT_BRANCH].commit.hexsha == amended


def test_push_publishes_the_branch_and_no_tag(repo, remote):
    repo.git.tag("-a", "v1-unpublished", "-m", "not for the world yet")
    with repo.config_writer() as config:
        config.set_value("push", "followTags", "true")
    result = sweep(SweepRequest(repo=Path(repo.working_tree_dir), push=str(remote)))
    assert result.pushed
    assert gitpython.Repo(remote).git.for_each_ref("--format=%(refname)") == f"refs/heads/{DEFAULT_BRANCH}"


def test_sparse_checkout_sweeps_the_whole_commit(repo):
    repo.git.sparse_checkout("set", "docs")
    assert not (Path(repo.working_tree_dir) / STEP_LITE).exists()
    result = sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
    assert (result.status, result.files, result.errors) == ("created", [GEMMA_LITE, STEP_LITE], [])


def test_live_sweep_whose_pid_is_not_visible_here_is_left_alone(repo, tmp_path, monkeypatch):
    """A sweep in another PID namespace (a container sharing the checkout): its PID means nothing here."""
    proc, tree = start_stalled_sweep(repo, tmp_path)

    def invisible(pid, signum):
        raise ProcessLookupError(pid)

    try:
        monkeypatch.setattr(os, "kill", invisible)
        result = sweep(SweepRequest(repo=Path(repo.working_tree_dir), branch="contractfix/second"))
        monkeypatch.undo()
        assert tree.is_dir() and not any("stale" in n for n in result.notes)
        assert worktree_count(repo) == 2
    finally:
        monkeypatch.undo()
        proc.terminate()
        proc.wait(timeout=30)
    assert worktree_count(repo) == 1 and not tree.parent.exists()


FAKE_GPG = """#!/bin/sh
cat > /dev/null
[ -n "$FAIL" ] && {{ echo "gpg: no secret key" >&2; exit 2; }}
echo "[GNUPG:] SIG_CREATED D 1 8 00 1 X" >&2
printf -- '-----BEGIN PGP SIGNATURE-----\\nfake\\n-----END PGP SIGNATURE-----\\n'
"""


@pytest.mark.parametrize("works", [True, False], ids=["signed", "cannot-sign"])
def test_commit_gpgsign_is_honoured(repo, tmp_path, monkeypatch, works):
    gpg = tmp_path / "gpg"
    gpg.write_text(FAKE_GPG.format())
    gpg.chmod(0o755)
    if not works:
        monkeypatch.setenv("FAIL", "1")
    with repo.config_writer() as config:
        config.set_value("commit", "gpgSign", "true").set_value("gpg", "program", str(gpg))
    if works:
        result = sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
        assert "\ngpgsig -----BEGIN PGP SIGNATURE-----" in repo.git.cat_file("commit", result.commit)
    else:
        with pytest.raises(GitError, match=r"cannot sign the commit \(commit.gpgSign is set\): .*gpg failed to sign"):
            sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
        assert DEFAULT_BRANCH not in repo.heads


# Failures: a clear message, nothing half-done, nothing left behind.


def test_failing_smudge_filter_is_a_clear_error(repo):
    root = Path(repo.working_tree_dir)
    (root / ".gitattributes").write_text("*.py filter=broken\n")
    with repo.config_writer() as config:
        config.set_value('filter "broken"', "clean", "cat").set_value('filter "broken"', "smudge", "false")
        config.set_value('filter "broken"', "required", "true")
    repo.git.add(".gitattributes")
    repo.git.commit("-m", "attributes", env=HUMAN.env())
    state = checkout_state(repo)
    with pytest.raises(GitError, match=r"cannot check out [0-9a-f]{12} in a temporary worktree: .*smudge filter broken failed"):
        sweep(SweepRequest(repo=root))
    assert checkout_state(repo) == state and DEFAULT_BRANCH not in repo.heads and worktree_count(repo) == 1


@pytest.mark.parametrize("where", ["missing/pr.md", "folder", "", "/dev/full"])
def test_unwritable_pr_body_is_refused_before_the_branch_moves(repo, tmp_path, where):
    (tmp_path / "folder").mkdir()
    target = Path(where) if where in ("", "/dev/full") else tmp_path / where
    if where == "/dev/full" and not Path(where).exists():
        pytest.skip("no /dev/full here")
    with pytest.raises(ValueError, match="--pr-body|cannot write the PR body"):
        sweep(SweepRequest(repo=Path(repo.working_tree_dir), pr_body=target))
    assert DEFAULT_BRANCH not in repo.heads and worktree_count(repo) == 1


def test_empty_push_remote_is_refused(repo):
    with pytest.raises(ValueError, match="--push needs a remote"):
        sweep(SweepRequest(repo=Path(repo.working_tree_dir), push=""))
    assert DEFAULT_BRANCH not in repo.heads


def refuse_ref_updates(repo: gitpython.Repo) -> None:
    hook = Path(repo.git_dir) / "hooks/reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] && { echo "refs are frozen" >&2; exit 1; }\nexit 0\n')
    hook.chmod(0o755)


def stale_ref_lock(repo: gitpython.Repo) -> None:
    lock = Path(repo.git_dir) / f"refs/heads/{DEFAULT_BRANCH}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")


@pytest.mark.parametrize("block, cause", [(refuse_ref_updates, "refs are frozen"), (stale_ref_lock, "File exists")])
def test_branch_update_failure_says_what_failed(repo, block, cause):
    block(repo)
    with pytest.raises(GitError) as failed:
        sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
    message = str(failed.value)
    assert f"cannot update branch {DEFAULT_BRANCH!r}" in message and cause in message
    assert "changed during the sweep" not in message


KILL_AT_WORKTREE_ADD = """#!/bin/sh
case " $* " in *" worktree add "*) kill -9 $PPID; sleep 10; exit 1;; esac
exec {git} "$@"
"""


def test_nothing_left_behind_when_killed_before_the_worktree_exists(repo, tmp_path, monkeypatch):
    """SIGKILL between making the worktree's folder and `git worktree add`."""
    bin_dir, temp = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    temp.mkdir()
    (bin_dir / "git").write_text(KILL_AT_WORKTREE_ADD.format(git=shutil.which("git")))
    (bin_dir / "git").chmod(0o755)
    code = "from pathlib import Path; import sys; from contractfix import sweep; sweep.sweep(sweep.SweepRequest(repo=Path(sys.argv[1])))"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TMPDIR": str(temp)}
    killed = subprocess.run([sys.executable, "-c", code, repo.working_tree_dir], cwd=ROOT, env=env, capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    sweep(SweepRequest(repo=Path(repo.working_tree_dir)))
    assert list(temp.iterdir()) == []
    assert [p.name for p in Path(repo.git_dir).iterdir() if "sweep" in p.name and any(p.iterdir())] == []
    assert worktree_count(repo) == 1


def test_symlinked_file_is_reported_under_its_own_name(repo):
    root = Path(repo.working_tree_dir)
    alias = str(Path(STEP_LITE).with_name("step_alias.py"))
    (root / alias).symlink_to("step_lite.py")
    repo.git.add(alias)
    repo.git.commit("-m", "alias", env=HUMAN.env())
    result = sweep(SweepRequest(repo=root))
    assert [e.path.as_posix() for e in result.errors] == [alias]
    assert result.files == [GEMMA_LITE, STEP_LITE]
