"""`sweep`: real repos in temp dirs, a real bare remote; the user's checkout must never change."""

from __future__ import annotations

from pathlib import Path

import git as gitpython
import pytest

from contractfix import commit_message, engine
from contractfix.config import Options
from contractfix.gitops import GitError
from contractfix.sweep import DEFAULT_BRANCH, SweepRequest, sweep
from tests.gitrepo import (
    GEMMA_LITE,
    HUMAN,
    OWNER,
    STEP_LITE,
    TINY_LLAMA,
    add_unfixable,
    add_violation,
    checkout_state,
    commit_change,
    show,
)

pytestmark = pytest.mark.usefixtures("git_env")


def run(repo: gitpython.Repo, **given):
    return sweep(SweepRequest(repo=Path(repo.working_tree_dir), **given))


def branch_log(repo: gitpython.Repo, base: str, branch: str = DEFAULT_BRANCH) -> list[gitpython.Commit]:
    return list(repo.iter_commits(f"{base}..{branch}"))


def test_first_sweep_commits_both_fixes_on_the_branch(repo):
    base = repo.head.commit.hexsha
    result = run(repo)
    assert (result.status, result.base) == ("created", base)
    assert result.files == [GEMMA_LITE, STEP_LITE]
    assert sorted((f.rule, f.cls) for f in result.fixed) == [("PP001", "StepLiteModel"), ("PP002", "GemmaLiteModel")]
    [commit] = branch_log(repo, base)
    assert commit.hexsha == result.commit == repo.heads[DEFAULT_BRANCH].commit.hexsha
    assert [p.hexsha for p in commit.parents] == [base]
    assert (commit.author.name, commit.author.email) == (OWNER.name, OWNER.email)
    assert commit.summary == "Fix 2 pipeline-parallel contract violations (PP001, PP002)"
    message = commit.message
    assert message.index(GEMMA_LITE) < message.index("PP002 GemmaLiteModel") < message.index(STEP_LITE)
    assert commit_message.is_ours(message, commit.tree.hexsha, base)
    assert commit_message.trailer() in message.rstrip().splitlines()[-2:]
    assert '["hidden_states", "residual"]' in show(repo, DEFAULT_BRANCH, STEP_LITE)
    assert sorted(commit.stats.files) == [GEMMA_LITE, STEP_LITE]
    assert repo.git.worktree("list", "--porcelain").count("worktree ") == 1


def test_branch_holds_exactly_what_fix_writes(repo, tmp_path):
    result = run(repo)
    copy = tmp_path / "copy"
    repo.git.worktree("add", "--detach", str(copy), result.base)
    fixed = engine.fix([copy], Options())
    assert {c.path.relative_to(copy).as_posix() for c in fixed.changes} == set(result.files)
    for rel in result.files:
        assert (copy / rel).read_text() == show(repo, result.commit, rel)


def test_users_checkout_is_untouched_byte_for_byte(repo):
    root = Path(repo.working_tree_dir)
    (root / TINY_LLAMA).write_text((root / TINY_LLAMA).read_text() + "# uncommitted edit\n")
    (root / STEP_LITE).write_text("staged but not committed\n")
    repo.git.add(STEP_LITE)
    (root / "notes.txt").write_text("untracked\n")
    before = checkout_state(repo)
    result = run(repo)
    assert checkout_state(repo) == before
    assert result.status == "created"
    assert any("uncommitted or untracked files" in n for n in result.notes)
    assert result.files == [GEMMA_LITE, STEP_LITE]


def test_rerun_without_change_makes_no_commit(repo):
    first = run(repo)
    reflog = repo.git.reflog("show", DEFAULT_BRANCH)
    second = run(repo)
    assert (second.status, second.commit) == ("unchanged", first.commit)
    assert repo.git.reflog("show", DEFAULT_BRANCH) == reflog
    assert len(branch_log(repo, first.base)) == 1


def test_rerun_after_new_violation_on_base_rebuilds_the_branch(repo):
    first = run(repo)
    new_base = add_violation(repo)
    second = run(repo)
    assert second.status == "updated" and second.base == new_base
    [commit] = branch_log(repo, new_base)
    assert [p.hexsha for p in commit.parents] == [new_base]
    assert not repo.is_ancestor(first.commit, second.commit)
    assert second.files == [GEMMA_LITE, STEP_LITE, TINY_LLAMA]
    assert commit.summary.startswith("Fix 3 ")


def test_human_commit_on_branch_is_refused_then_forced(repo):
    run(repo)
    repo.git.checkout(DEFAULT_BRANCH)
    human = commit_change(repo, "vllm/sequence.py", "\n", "\n# reviewer note\n")
    repo.git.checkout("main")
    base = repo.heads.main.commit.hexsha
    with pytest.raises(GitError) as refused:
        run(repo)
    assert human[:12] in str(refused.value) and HUMAN.name in str(refused.value)
    assert repo.heads[DEFAULT_BRANCH].commit.hexsha == human
    forced = run(repo, force=True)
    assert forced.status == "updated"
    assert [c.author.name for c in branch_log(repo, base)] == [OWNER.name]


def test_nothing_to_do_makes_no_branch(repo):
    fixed = run(repo)
    repo.git.checkout("--detach", fixed.commit)
    result = run(repo, branch="contractfix/again")
    assert (result.status, result.commit, result.fixed) == ("nothing to do", None, [])
    assert "contractfix/again" not in repo.heads


def test_detached_head_is_a_fine_base(repo):
    base = repo.head.commit.hexsha
    repo.git.checkout("--detach", "HEAD")
    result = run(repo)
    assert result.base == base and result.status == "created"
    assert repo.head.is_detached and repo.head.commit.hexsha == base


def test_base_option_picks_the_commit(repo):
    old = repo.head.commit.hexsha
    add_violation(repo)
    result = run(repo, base=old)
    assert result.base == old and TINY_LLAMA not in result.files


def test_commit_per_rule_makes_one_commit_per_rule_and_reruns_clean(repo, monkeypatch):
    base = repo.head.commit.hexsha
    result = run(repo, commit_per="rule")
    commits = list(reversed(branch_log(repo, base)))
    assert [c.summary for c in commits] == [
        "Fix 1 pipeline-parallel contract violation (PP001)",
        "Fix 1 pipeline-parallel contract violation (PP002)",
    ]
    assert [sorted(c.stats.files) for c in commits] == [[STEP_LITE], [GEMMA_LITE]]
    assert result.commits == [c.hexsha for c in commits]
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2030-01-01T00:00:00 +0000")  # a later run: other parent shas
    assert run(repo, commit_per="rule").status == "unchanged"
    assert run(repo).status == "updated"
    assert len(branch_log(repo, base)) == 1


def test_findings_left_for_review_are_in_message_and_result(repo):
    add_unfixable(repo)
    result = run(repo)
    assert {(f.rule, f.cls) for f in result.unfixed} >= {("PP001", "TinyLlamaModel")}
    assert all(f.fix is None and f.path.as_posix() == TINY_LLAMA for f in result.unfixed)
    message = repo.heads[DEFAULT_BRANCH].commit.message
    left = message[message.index("Left for review:"):]
    assert TINY_LLAMA in left and '"scale"' in left


def test_author_option_and_missing_identity(repo):
    with repo.config_writer() as config:
        config.remove_section("user")
    with pytest.raises(GitError, match="no commit identity"):
        run(repo)
    assert DEFAULT_BRANCH not in repo.heads
    result = run(repo, author="Sweep Bot <bot@example.invalid>")
    author = repo.commit(result.commit).author
    assert (author.name, author.email) == ("Sweep Bot", "bot@example.invalid")


def test_push_then_repush_uses_the_lease(repo, remote):
    first = run(repo, push=str(remote))
    bare = gitpython.Repo(remote)
    assert first.pushed and first.push_updated and bare.heads[DEFAULT_BRANCH].commit.hexsha == first.commit
    again = run(repo, push=str(remote))
    assert (again.status, again.pushed, again.push_updated) == ("unchanged", True, False)
    add_violation(repo)
    third = run(repo, push=str(remote))
    assert third.status == "updated"
    assert bare.heads[DEFAULT_BRANCH].commit.hexsha == third.commit
    assert not bare.is_ancestor(first.commit, third.commit)


def test_fresh_clone_reuses_the_remote_branch(repo, remote, tmp_path):
    first = run(repo, push=str(remote))
    repo.git.push(str(remote), "main")
    clone = gitpython.Repo.clone_from(str(remote), tmp_path / "clone")
    clone.git.checkout("main")
    with clone.config_writer() as config:
        config.set_value("user", "name", "Bot").set_value("user", "email", "bot@example.invalid")
    result = sweep(SweepRequest(repo=Path(clone.working_tree_dir), push="origin"))
    assert (result.status, result.commit, result.pushed, result.push_updated) == ("unchanged", first.commit, True, False)
    assert clone.heads[DEFAULT_BRANCH].commit.hexsha == first.commit


def test_someone_elses_commit_on_the_remote_branch_is_refused(repo, remote, tmp_path):
    run(repo, push=str(remote))
    other = gitpython.Repo.clone_from(str(remote), tmp_path / "other", branch=DEFAULT_BRANCH)
    human = commit_change(other, "vllm/sequence.py", "\n", "\n# reviewer note\n")
    other.git.push("origin", DEFAULT_BRANCH)
    with pytest.raises(GitError, match="not made by contractfix") as refused:
        run(repo, push=str(remote))
    assert human[:12] in str(refused.value)
    assert gitpython.Repo(remote).heads[DEFAULT_BRANCH].commit.hexsha == human
