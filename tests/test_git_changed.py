"""`contractfix check --changed [--base REF]`: only changed files, still the whole repo's registry and bases."""

from __future__ import annotations

import json
from pathlib import Path

import git as gitpython
import pytest
from typer.testing import CliRunner

from contractfix.cli import app
from tests.gitrepo import ENTRY_DEFAULT, TINY_LLAMA, add_violation, commit_change, example_repo

pytestmark = pytest.mark.usefixtures("git_env")
TINY_MIMO = "vllm/model_executor/models/tiny_mimo.py"


@pytest.fixture
def repo(tmp_path: Path) -> gitpython.Repo:
    """The example tree on main (with its two violations), and a contributor's branch `feature`."""
    repo = example_repo(tmp_path / "repo")
    repo.git.checkout("-b", "feature")
    return repo


def check(repo: gitpython.Repo, *args: str):
    root = repo.working_tree_dir
    result = CliRunner().invoke(app, ["check", "--format", "json", *args, root], catch_exceptions=False)
    return result.exit_code, json.loads(result.output) if result.output.startswith("{") else result.output


def found(doc: dict) -> list[tuple[str, str]]:
    return sorted((f["rule"], f["class"]) for f in doc["findings"])


def test_only_changed_files_are_reported(repo):
    add_violation(repo)
    code, doc = check(repo, "--changed")
    assert code == 1
    assert found(doc) == [("PP002", "TinyLlamaForCausalLM")]
    assert doc["summary"]["files_scanned"] == 1
    code, whole = check(repo)
    assert len(whole["findings"]) == 3


def test_uncommitted_and_untracked_changes_count(repo):
    root = Path(repo.working_tree_dir)
    path = root / TINY_LLAMA
    path.write_text(path.read_text().replace(ENTRY_DEFAULT, "intermediate_tensors: IntermediateTensors | None,"))
    (root / "vllm/model_executor/models/extra.py").write_text((root / TINY_MIMO).read_text())
    code, doc = check(repo, "--changed")
    assert (code, found(doc), doc["summary"]["files_scanned"]) == (1, [("PP002", "TinyLlamaForCausalLM")], 2)


def test_no_change_checks_nothing(repo):
    code, doc = check(repo, "--changed")
    assert (code, doc["findings"], doc["summary"]["files_scanned"]) == (0, [], 0)


def test_base_option(repo):
    first = repo.head.commit.hexsha
    add_violation(repo)
    commit_change(repo, TINY_MIMO, "\n", "\n# touched\n")
    code, doc = check(repo, "--changed", "--base", "HEAD~1")
    assert (code, doc["summary"]["files_scanned"]) == (0, 1)
    code, doc = check(repo, "--changed", "--base", first)
    assert code == 1 and doc["summary"]["files_scanned"] == 2


def test_merge_base_with_default_branch(repo):
    add_violation(repo)
    repo.git.checkout("main")
    commit_change(repo, TINY_MIMO, "\n", "\n# moved on main\n")
    repo.git.checkout("feature")
    code, doc = check(repo, "--changed")
    assert code == 1 and doc["summary"]["files_scanned"] == 1


def test_errors_exit_2(repo, tmp_path):
    code, out = check(repo, "--base", "HEAD")
    assert code == 2 and "--base needs --changed" in out
    code, out = check(repo, "--changed", "--base", "nope")
    assert code == 2 and "does not name a commit" in out
    repo.git.branch("-m", "main", "trunk")
    code, out = check(repo, "--changed")
    assert code == 2 and "no default branch" in out
    result = CliRunner().invoke(app, ["check", "--changed", str(tmp_path / "home")])
    assert result.exit_code == 2 and "not inside a git repository" in result.output
