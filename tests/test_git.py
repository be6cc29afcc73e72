"""The gitpython wrappers, on real repositories: changed files, branches, leases, identities."""

from __future__ import annotations

from pathlib import Path

import git as gitpython
import pytest

from contractfix import commit_message, gitops
from tests.gitrepo import HUMAN, STEP_LITE, TINY_LLAMA, commit_change

pytestmark = pytest.mark.usefixtures("git_env")


def test_changed_files_committed_uncommitted_untracked(repo):
    base = repo.head.commit.hexsha
    root = Path(repo.working_tree_dir)
    commit_change(repo, STEP_LITE, "\n", "\n# committed\n")
    (root / TINY_LLAMA).write_text((root / TINY_LLAMA).read_text() + "# uncommitted\n")
    (root / "vllm/new_model.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("not python\n")
    (root / "vllm/model_executor/models/utils.py").unlink()
    (root / ".gitignore").write_text("ignored.py\n")
    (root / "ignored.py").write_text("x = 2\n")
    got = [p.relative_to(root.resolve()).as_posix() for p in gitops.changed_files(repo, base)]
    assert got == sorted([STEP_LITE, TINY_LLAMA, "vllm/new_model.py"])
    assert gitops.changed_files(repo, repo.head.commit.hexsha) == sorted(
        [(root / TINY_LLAMA).resolve(), (root / "vllm/new_model.py").resolve()]
    )


def test_default_branch_base(repo, tmp_path):
    fork = repo.head.commit.hexsha
    repo.git.checkout("-b", "feature")
    commit_change(repo, STEP_LITE, "\n", "\n# on feature\n")
    repo.git.checkout("main")
    commit_change(repo, TINY_LLAMA, "\n", "\n# on main\n")
    repo.git.checkout("feature")
    assert gitops.default_branch_base(repo) == fork
    repo.git.checkout("main")
    clone = gitpython.Repo.clone_from(repo.working_tree_dir, tmp_path / "clone", branch="feature")
    assert [h.name for h in clone.heads] == ["feature"]
    assert gitops.default_branch_base(clone) == fork
    lonely = gitpython.Repo.init(tmp_path / "lonely", initial_branch="trunk")
    lonely.git.commit("--allow-empty", "-m", "x", env=HUMAN.env())
    with pytest.raises(gitops.GitError, match="no default branch"):
        gitops.default_branch_base(lonely)


def test_push_lease_refuses_what_it_did_not_see(repo, tmp_path):
    remote = tmp_path / "remote.git"
    gitpython.Repo.init(remote, bare=True)
    first = repo.head.commit.hexsha
    repo.create_head("topic", first)
    gitops.push(repo, str(remote), "topic", None)
    second = commit_change(repo, STEP_LITE, "\n", "\n# second\n")
    gitops.set_branch(repo, "topic", second, first)
    with pytest.raises(gitops.GitError, match="refused"):
        gitops.push(repo, str(remote), "topic", None)
    with pytest.raises(gitops.GitError, match="refused"):
        gitops.push(repo, str(remote), "topic", second)
    assert gitops.remote_tip(repo, str(remote), "topic") == first
    third = repo.git.commit_tree(repo.commit(first).tree.hexsha, "-m", "rewritten", env=HUMAN.env())
    gitops.set_branch(repo, "topic", third, second)
    gitops.push(repo, str(remote), "topic", first)
    assert gitops.remote_tip(repo, str(remote), "topic") == third


def test_set_branch_compares_and_swaps(repo):
    tip = repo.head.commit.hexsha
    gitops.set_branch(repo, "topic", tip, None)
    with pytest.raises(gitops.GitError, match="changed during the sweep"):
        gitops.set_branch(repo, "topic", tip, None)
    assert gitops.branch_tip(repo, "topic") == tip


@pytest.mark.parametrize(
    "given, expected",
    [
        ("Ann Lee <ann@example.org>", ("Ann Lee", "ann@example.org")),
        ("  Bot <bot@ci.example>  ", ("Bot", "bot@ci.example")),
    ],
)
def test_identity_from_author(repo, given, expected):
    who = gitops.identity(repo, given)
    assert (who.name, who.email) == expected


@pytest.mark.parametrize("given", ["Ann", "<ann@example.org>", "Ann <not-an-email>", "Ann <a@b> <c@d>"])
def test_identity_rejects_malformed_author(repo, given):
    with pytest.raises(gitops.GitError, match="--author"):
        gitops.identity(repo, given)


def test_identity_from_environment_then_config(repo, monkeypatch):
    assert gitops.identity(repo) == gitops.Identity("Repo Owner", "owner@example.invalid")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Name")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "env@example.invalid")
    assert gitops.identity(repo) == gitops.Identity("Env Name", "env@example.invalid")


def test_remote_location(repo, tmp_path, monkeypatch):
    (tmp_path / "remote.git").mkdir()
    repo.create_remote("origin", "https://example.invalid/r.git")
    monkeypatch.chdir(tmp_path)
    assert gitops.remote_location(repo, "remote.git") == str((tmp_path / "remote.git").resolve())
    assert gitops.remote_location(repo, "origin") == "origin"
    assert gitops.remote_location(repo, "https://example.invalid/x.git") == "https://example.invalid/x.git"


def test_branch_of(repo, tmp_path):
    assert gitops.branch_of(repo, "HEAD") == "main"
    clone = gitpython.Repo.clone_from(repo.working_tree_dir, tmp_path / "clone")
    assert gitops.branch_of(clone, "origin/main") == "main"
    repo.git.checkout("--detach")
    assert gitops.branch_of(repo, "HEAD") is None
    assert gitops.branch_of(repo, repo.head.commit.hexsha) is None


TREE, PARENT = "a" * 40, "b" * 40
SIGNED = commit_message.sign(f"Fix\n\nbody\n\n{commit_message.trailer()}\n", TREE, PARENT)


@pytest.mark.parametrize(
    "message, tree, parent, ours",
    [
        (SIGNED, TREE, PARENT, True),
        (SIGNED, "c" * 40, PARENT, False),
        (SIGNED, TREE, "c" * 40, False),
        (SIGNED, TREE, None, False),
        (SIGNED.replace("body", "reworded"), TREE, PARENT, False),
        (SIGNED + "Signed-off-by: A <a@b>\n", TREE, PARENT, False),
        (f"Fix\n\n{commit_message.trailer()}\n", TREE, PARENT, False),
        (commit_message.sign("Fix\n\nGenerated-by: someone-else 1.0\n", TREE, PARENT), TREE, PARENT, False),
        (commit_message.sign("Fix by hand\n", TREE, PARENT), TREE, PARENT, False),
    ],
)
def test_is_ours_needs_the_record_of_tree_parent_and_message(message, tree, parent, ours):
    assert commit_message.is_ours(message, tree, parent) is ours


@pytest.mark.parametrize("name", ["modèle.py", 'qu"ote.py', "new\nline.py", "tab\there.py"])
def test_changed_files_with_names_git_would_quote(repo, name):
    base = repo.head.commit.hexsha
    root = Path(repo.working_tree_dir)
    folder = root / "vllm/model_executor/models"
    (folder / f"committed_{name}").write_text("x = 1\n")
    repo.git.add("--", f"vllm/model_executor/models/committed_{name}")
    repo.git.commit("-m", "odd name", env=HUMAN.env())
    (folder / f"untracked_{name}").write_text("x = 2\n")
    got = {p.name for p in gitops.changed_files(repo, base)}
    assert got == {f"committed_{name}", f"untracked_{name}"}
