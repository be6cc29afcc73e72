"""A hostile world, round 2: paths that contractfix owns with something planted in them, low
file-descriptor limits, generated code at sizes no person writes, and numbers that are not numbers.

Each case runs the real command in a real process against a real git repository, within a time
bound, and expects either a result or one line and exit 2: never a traceback, never a hang, and
never a byte changed outside what contractfix owns.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import git as gitpython
import pytest

from contractfix import apply, cache
from contractfix.smoke import venv
from contractfix.smoke.errors import SetupError
from contractfix.sweep import DEFAULT_BRANCH
from tests.gitrepo import STEP_LITE, checkout_state, example_repo
from tests.test_bad_input import violating

pytestmark = pytest.mark.usefixtures("git_env")
RUN = "import sys; from contractfix.cli import run; sys.argv[0] = 'contractfix'; run()"


def contractfix(*args: str, cwd: Path, nofile: int | None = None, timeout: float = 120, **env: str):
    """The console script in its own process, with `ulimit -n nofile` (soft and hard) when given."""
    limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))) if nofile else None
    return subprocess.run([sys.executable, "-c", RUN, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit, env={**os.environ, **env})


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ")
    return done.stderr


def tree_bytes(root: Path) -> dict[str, bytes | str]:
    """Every file and link under `root`, by relative path."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if (Path(folder) / d).is_symlink()]:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = os.readlink(path) if path.is_symlink() else path.read_bytes()
    return found


def repo_state(repo: gitpython.Repo) -> tuple:
    """The user's checkout, refs, stash and worktree list."""
    return (checkout_state(repo), repo.git.for_each_ref(), repo.git.stash("list"),
            repo.git.worktree("list", "--porcelain"))


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    """A person's data outside the repository."""
    data = tmp_path / "precious"
    (data / "sub").mkdir(parents=True)
    (data / "keep.txt").write_text("keep me\n")
    (data / "sub" / "notes.md").write_text("and me\n")
    return data


@pytest.fixture
def repo(tmp_path: Path, git_env: None) -> gitpython.Repo:
    made = example_repo(tmp_path / "repo")
    (tmp_path / "repo" / "scratch.txt").write_text("untracked work\n")
    made.git.stash("push", "--include-untracked", "-m", "someone's stash")
    return made


def sweep_folder(repo: gitpython.Repo) -> Path:
    return Path(repo.git_dir) / "contractfix-sweep"


@pytest.mark.parametrize("plant", ["symlink to data", "file", "read-only folder"])
def test_a_sweep_folder_that_is_not_ours_is_refused_and_nothing_is_touched(repo, precious, plant):
    folder = sweep_folder(repo)
    if plant == "symlink to data":
        folder.symlink_to(precious, target_is_directory=True)
    elif plant == "file":
        folder.write_text("x\n")
    else:
        folder.mkdir()
        (folder / "theirs").write_text("a person's file\n")
        folder.chmod(0o555)
    before, data = repo_state(repo), tree_bytes(precious)
    message = one_line_error(contractfix("sweep", ".", cwd=Path(repo.working_tree_dir)))
    assert str(folder) in message and "touched nothing" in message
    assert (repo_state(repo), tree_bytes(precious)) == (before, data)
    if plant == "read-only folder":
        assert (folder / "theirs").read_text() == "a person's file\n"
        folder.chmod(0o755)


def test_what_a_sweep_did_not_make_in_its_folder_is_left_alone(repo, precious, tmp_path):
    """A planted folder, a link into a person's data, and a worktree whose lock reason names a run
    folder but lives elsewhere: none of them is removed, and the sweep still does its work."""
    folder = sweep_folder(repo)
    (folder / "planted").mkdir(parents=True)
    (folder / "planted" / "f").write_text("someone's\n")
    (folder / "tmplink").symlink_to(precious, target_is_directory=True)
    elsewhere = tmp_path / "their-worktree"
    repo.git.worktree("add", "--detach", "--lock", "--reason", "contractfix sweep folder tmpgone", str(elsewhere))
    (elsewhere / "work.txt").write_text("uncommitted\n")
    data, theirs = tree_bytes(precious), tree_bytes(elsewhere)
    done = contractfix("sweep", ".", cwd=Path(repo.working_tree_dir))
    assert done.returncode == 0, done.stderr
    assert f"left {folder / 'planted'} alone" in done.stdout + done.stderr
    assert f"left {folder / 'tmplink'} alone" in done.stdout + done.stderr
    assert (folder / "planted" / "f").read_text() == "someone's\n"
    assert (tree_bytes(precious), tree_bytes(elsewhere)) == (data, theirs)
    assert str(elsewhere) in repo.git.worktree("list")
    assert DEFAULT_BRANCH in repo.heads


def test_a_folder_the_sweep_marked_is_cleaned_up_when_its_run_is_dead(repo):
    """The mark is what makes a folder the sweep's: one left by a killed run (mark, no lock) goes."""
    folder = sweep_folder(repo) / "tmpdead"
    (folder / "tree").mkdir(parents=True)
    (folder / "tree" / "left.py").write_text("x = 1\n")
    (folder / ".contractfix-sweep").write_bytes(b"made by contractfix sweep\n")
    done = contractfix("sweep", ".", cwd=Path(repo.working_tree_dir))
    assert done.returncode == 0, done.stderr
    assert f"removed the stale worktree {folder / 'tree'}" in done.stdout + done.stderr
    assert not sweep_folder(repo).exists()


@pytest.mark.parametrize("nofile", [13, 14])
def test_check_under_a_low_descriptor_limit_gives_its_result(tmp_path, nofile):
    """Below what a worker pool needs, the files are analyzed in this process: same findings."""
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    for i in range(60):  # past the count that starts a pool
        (models / f"m{i}.py").write_text(violating(f"M{i}"))
    low = contractfix("check", "--no-cache", ".", cwd=tmp_path, nofile=nofile)
    usual = contractfix("check", "--no-cache", ".", cwd=tmp_path)
    assert "Traceback" not in low.stderr
    assert (low.returncode, low.stdout) == (usual.returncode, usual.stdout) == (1, usual.stdout)
    assert "60 error(s), 0 warning(s)" in low.stdout


def test_sweep_under_a_low_descriptor_limit_refuses_and_leaves_nothing(repo, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    before = repo_state(repo)
    done = contractfix("sweep", ".", cwd=Path(repo.working_tree_dir), nofile=16, TMPDIR=str(temp))
    assert "ulimit -n" in one_line_error(done)
    assert repo_state(repo) == before
    assert not sweep_folder(repo).exists() and list(temp.iterdir()) == []


def test_sweep_raises_a_low_soft_limit_within_the_hard_one(repo):
    def soft_only():
        resource.setrlimit(resource.RLIMIT_NOFILE, (16, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    done = subprocess.run([sys.executable, "-c", RUN, "sweep", "."], cwd=repo.working_tree_dir, capture_output=True,
                          text=True, timeout=120, preexec_fn=soft_only)
    assert done.returncode == 0, done.stderr
    assert DEFAULT_BRANCH in repo.heads and repo.git.worktree("list").count("\n") == 0


def test_a_chain_of_a_thousand_classes_is_checked(tmp_path):
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    chain = [violating("C0").replace("class C0Model", "class C0")]
    chain += [f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, 1000)]
    (models / "chain.py").write_text("\n\n".join(chain))
    done = contractfix("check", "--no-cache", ".", cwd=tmp_path)
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stdout + done.stderr
    assert done.returncode == 1 and "chain.py:" in done.stdout and "PP001" in done.stdout


def test_a_file_too_large_to_rewrite_is_reported_and_left_alone(tmp_path):
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    big = models / "big.py"
    big.write_text("TABLE = [" + ", ".join("0" for _ in range(2_000_000)) + "]\n\n" + violating("Big"))
    (models / "small.py").write_text(violating("Small"))
    data = big.read_bytes()
    assert len(data) > apply.MAX_REWRITE_BYTES
    done = contractfix("fix", "--no-cache", ".", cwd=tmp_path, timeout=60)
    assert "Traceback" not in done.stderr
    assert "big.py: error: fix not applied:" in done.stdout + done.stderr and "left as it was" in done.stdout + done.stderr
    assert big.read_bytes() == data
    assert '["hidden_states", "residual"]' in (models / "small.py").read_text()
    assert sorted(p.name for p in models.iterdir()) == ["big.py", "small.py"]


@pytest.mark.parametrize("args", [
    ["smoke", "--timeout", "-5"], ["smoke", "--timeout", "nan"], ["smoke", "--timeout", "inf"],
    ["smoke", "--timeout", "0"], ["check", "--jobs", "0"], ["fix", "--jobs", "-2"],
])
def test_numbers_that_are_not_usable_are_one_line_errors(tmp_path, args):
    (tmp_path / "model.py").write_text(violating())
    before = (tmp_path / "model.py").read_bytes()
    one_line_error(contractfix(*args, "model.py", cwd=tmp_path))
    assert (tmp_path / "model.py").read_bytes() == before


def test_pp_sizes_below_two_are_refused():
    from contractfix.smoke.api import run_smoke
    from contractfix.smoke.errors import UsageError

    for sizes in [(1,), (), (2, 0)]:
        with pytest.raises(UsageError, match="PP sizes"):
            run_smoke([STEP_LITE], pp_sizes=sizes)


# The smoke environment's cache: a lock, a log, the environment folder.

def test_a_planted_link_in_the_smoke_cache_leads_nowhere(tmp_path, precious):
    data = tree_bytes(precious)
    lock = tmp_path / "env.lock"
    lock.symlink_to(precious / "keep.txt")
    with pytest.raises(SetupError, match="cannot open"), venv._locked(lock):
        pass
    root = tmp_path / "env"
    root.symlink_to(precious, target_is_directory=True)
    with pytest.raises(SetupError, match="symbolic link"):
        venv._remove_env(root)
    assert tree_bytes(precious) == data


def test_only_a_virtualenv_is_removed_from_where_the_smoke_environment_goes(tmp_path):
    root = tmp_path / "env"
    root.mkdir()
    (root / "thesis.tex").write_text("three years\n")
    with pytest.raises(SetupError, match="not a virtualenv"):
        venv._remove_env(root)
    assert (root / "thesis.tex").exists()
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert venv._remove_env(root) and not root.exists()
    assert not venv._remove_env(root)


def test_a_lock_file_keeps_what_it_holds(tmp_path):
    lock = tmp_path / "env.lock"
    lock.write_text("a person's text\n")
    with venv._locked(lock):
        pass
    assert lock.read_text() == "a person's text\n"


def test_the_facts_cache_never_writes_through_a_planted_link(tmp_path, precious):
    from contractfix import facts

    folder = tmp_path / "facts"
    store = cache.FactsCache(folder, salt=b"test")
    key = store.key(b"x = 1\n", "m")
    folder.mkdir()
    (folder / key[:2]).symlink_to(precious, target_is_directory=True)
    data = tree_bytes(precious)
    store.put(key, facts.ModuleFacts(path="m.py", module="m"))
    assert tree_bytes(precious) == data and store.folder is None
