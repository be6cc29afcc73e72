"""`contractfix sweep` on the command line: text and JSON output, --pr-body, --open-pr with a fake gh."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import git as gitpython
import pytest
from typer.testing import CliRunner

from contractfix.cli import app
from contractfix.sweep import DEFAULT_BRANCH
from tests.gitrepo import GEMMA_LITE, STEP_LITE, checkout_state

pytestmark = pytest.mark.usefixtures("git_env")

FAKE_GH = """#!{python}
import json, os, sys
args = sys.argv[1:]
def value(flag):
    return args[args.index(flag) + 1] if flag in args else None
body = value("--body-file")
with open(os.environ["GH_LOG"], "a") as log:
    log.write(json.dumps({{"args": args, "cwd": os.getcwd(), "body": open(body).read() if body else None}}) + "\\n")
state = os.environ["GH_LOG"] + ".open"
prs = json.load(open(state)) if os.path.exists(state) else []
if args[:2] == ["pr", "list"]:
    found = [p for p in prs if p["head"] == value("--head")]
    print(json.dumps([{{"number": p["number"], "headRepositoryOwner": {{"login": p["owner"]}},
                       "isCrossRepository": p["cross"]}} for p in found]))
elif args[:2] == ["pr", "create"]:
    owner, _, head = value("--head").rpartition(":")
    prs.append({{"number": 7 + len(prs), "head": head, "owner": owner or "o", "cross": bool(owner)}})
    json.dump(prs, open(state, "w"))
    print(f"https://github.example/o/r/pull/{{prs[-1]['number']}}")
elif args[:2] == ["pr", "edit"]:
    print(f"https://github.example/o/r/pull/{{args[2]}}")
else:
    sys.exit(3)
"""


@pytest.fixture
def path_without_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holding only git and python: gh is certainly missing; add a fake one to `bin/`."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(folder))
    return folder


@pytest.fixture
def fake_gh(path_without_gh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `gh` that records its arguments (and the body file's text) to a JSON-lines log."""
    gh = path_without_gh / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable))
    gh.chmod(0o755)
    log = tmp_path / "gh.log"
    monkeypatch.setenv("GH_LOG", str(log))
    return log


def invoke(*args: str):
    return CliRunner().invoke(app, ["sweep", *args], catch_exceptions=False)


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_text_output_shows_branch_and_diffstat(repo):
    result = invoke(repo.working_tree_dir)
    assert result.exit_code == 0, result.output
    commit = repo.heads[DEFAULT_BRANCH].commit.hexsha
    assert f"branch {DEFAULT_BRANCH} created at {commit[:12]}" in result.output
    assert re.search(rf"{STEP_LITE} +\| 2 \+-", result.output) and "2 files changed" in result.output
    assert "2 fixed, 0 left for review, 0 error(s)" in result.output


def test_json_output_and_pr_body_file(repo, remote, tmp_path):
    body = tmp_path / "pr.md"
    result = invoke(repo.working_tree_dir, "--push", str(remote), "--pr-body", str(body), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {"branch", "base", "commit", "files", "fixed", "unfixed", "pushed", "pr_body"} <= doc.keys()
    assert doc["commit"] == repo.heads[DEFAULT_BRANCH].commit.hexsha == gitpython.Repo(remote).heads[DEFAULT_BRANCH].commit.hexsha
    assert (doc["files"], doc["pushed"], doc["pr_body"]) == ([GEMMA_LITE, STEP_LITE], True, str(body))
    assert sorted(f["class"] for f in doc["fixed"]) == ["GemmaLiteModel", "StepLiteModel"]
    text = body.read_text()
    assert doc["base"] in text and "| `vllm/model_executor/models/step_lite.py:19` | `StepLiteModel` | PP001 |" in text


def test_nothing_to_do_exits_0(repo):
    invoke(repo.working_tree_dir)
    repo.git.checkout(DEFAULT_BRANCH)
    result = invoke(repo.working_tree_dir, "--branch", "contractfix/next")
    assert result.exit_code == 0
    assert "nothing to do" in result.output and "contractfix/next" not in repo.heads


def test_errors_exit_2_with_a_message(repo, tmp_path):
    result = invoke(str(tmp_path / "home"))
    assert result.exit_code == 2 and "error:" in result.output and "not inside a git repository" in result.output
    result = invoke(repo.working_tree_dir, "--branch", "a..b")
    assert result.exit_code == 2 and "not a valid branch name" in result.output


def test_open_pr_creates_then_edits(repo, remote, fake_gh):
    root = repo.working_tree_dir
    first = invoke(root, "--push", str(remote), "--open-pr")
    assert first.exit_code == 0, first.output
    assert "https://github.example/o/r/pull/7" in first.output
    listed, created = calls(fake_gh)
    assert listed["args"][:4] == ["pr", "list", "--head", DEFAULT_BRANCH]
    args = created["args"]
    assert args[:4] == ["pr", "create", "--head", DEFAULT_BRANCH]
    assert args[args.index("--base") + 1] == "main"
    assert args[args.index("--title") + 1] == "Fix 2 pipeline-parallel contract violations (PP001, PP002)"
    assert "## What was wrong" in created["body"] and Path(created["cwd"]) == Path(root)
    second = invoke(root, "--push", str(remote), "--open-pr")
    assert second.exit_code == 0, second.output
    edited = calls(fake_gh)[-1]
    assert edited["args"][:3] == ["pr", "edit", "7"] and edited["body"] == created["body"]


def test_open_pr_without_gh_prints_the_command(repo, remote, path_without_gh):
    result = invoke(repo.working_tree_dir, "--push", str(remote), "--open-pr")
    assert result.exit_code == 2
    assert "gh is not on PATH" in result.output
    assert f"gh pr create --head {DEFAULT_BRANCH} --base main --title" in result.output
    body = Path(repo.git_dir) / "contractfix" / "PR_BODY.md"
    assert f"--body-file {body}" in result.output and body.is_file()
    assert gitpython.Repo(remote).heads[DEFAULT_BRANCH].commit == repo.heads[DEFAULT_BRANCH].commit
    assert os.environ["PATH"] == str(path_without_gh)


def test_demo_runs_the_whole_job_in_a_temp_repo():
    result = CliRunner().invoke(app, ["demo"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.output
    sections = [line for line in out.splitlines() if line.startswith("== ")]
    assert [s.split()[1] for s in sections] == ["contractfix", "git", "git", "git", "PR"]
    assert f"branch {DEFAULT_BRANCH} created at" in out and "2 fixed, 0 left for review" in out
    assert '+            ["hidden_states", "residual"], config.hidden_size' in out
    assert "Generated-by: contractfix" in out and "## What was wrong" in out


def test_dry_run_prints_the_plan_and_changes_nothing(repo, remote, fake_gh, tmp_path):
    body = tmp_path / "pr.md"
    state, refs = checkout_state(repo), repo.git.for_each_ref()
    args = ["--push", str(remote), "--open-pr", "--pr-body", str(body), "--label", "bot", "--dry-run"]
    result = invoke(repo.working_tree_dir, *args)
    assert result.exit_code == 0, result.output
    out = result.output
    base = repo.head.commit.hexsha
    assert f"dry run, nothing changed; would fix 2 file(s): {GEMMA_LITE}, {STEP_LITE}" in out
    assert f"\n  {GEMMA_LITE}:24: PP002 intermediate-tensors-default (GemmaLiteModel)\n" in out
    assert f"\n  {STEP_LITE}:19: PP001 key-not-allocated (StepLiteModel)\n" in out
    assert f"base: {base} (HEAD)" in out
    assert f"branch {DEFAULT_BRANCH}: create it with one commit on the base" in out
    assert f"push: refs/heads/{DEFAULT_BRANCH} to {remote} (absent there), with a lease, no tags" in out
    assert f"PR in the current directory's repository: edit the open one from {DEFAULT_BRANCH}, else gh pr create --head" in out
    assert "--label bot" in out and "2 to fix, 0 left for review, 0 error(s)" in out
    doc = json.loads(invoke(repo.working_tree_dir, *args, "--format", "json").output)
    assert (doc["status"], doc["commit"], doc["files"], doc["error"]) == ("dry run", None, [GEMMA_LITE, STEP_LITE], None)
    assert len(doc["fixed"]) == 2 and doc["plan"][0] == f"base: {base} (HEAD)"
    assert (checkout_state(repo), repo.git.for_each_ref()) == (state, refs)
    assert gitpython.Repo(remote).git.for_each_ref() == "" and not body.exists() and not fake_gh.exists()
    assert repo.git.worktree("list", "--porcelain").count("worktree ") == 1
    assert not (Path(repo.git_dir) / "contractfix-sweep").exists()


def test_dry_run_on_an_existing_branch_says_it_would_update_it(repo):
    first = invoke(repo.working_tree_dir)
    assert first.exit_code == 0
    tip = repo.heads[DEFAULT_BRANCH].commit.hexsha
    result = invoke(repo.working_tree_dir, "--dry-run")
    assert f"branch {DEFAULT_BRANCH}: update it (now at {tip[:12]})" in result.output
    assert repo.heads[DEFAULT_BRANCH].commit.hexsha == tip


def test_json_output_on_a_refusal_still_prints_the_object(repo):
    result = invoke(repo.working_tree_dir, "--branch", "a..b", "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.output)
    assert doc["status"] == "error" and "not a valid branch name" in doc["error"] and doc["branch"] == "a..b"


def test_json_output_on_a_failure_after_the_branch_moved(repo, remote):
    hook = remote / "hooks/pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    result = invoke(repo.working_tree_dir, "--push", str(remote), "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.output)
    assert doc["status"] == "error" and "refused" in doc["error"] and "no pushes today" in doc["error"]
    assert doc["commit"] == repo.heads[DEFAULT_BRANCH].commit.hexsha and doc["pushed"] is False
    assert doc["files"] == [GEMMA_LITE, STEP_LITE]


def test_json_output_on_a_bad_option_value(repo):
    result = invoke(repo.working_tree_dir, "--draft", "--format", "json")
    assert result.exit_code == 2
    assert "need --open-pr" in json.loads(result.output)["error"]


@pytest.fixture
def github(repo: gitpython.Repo, tmp_path: Path) -> Path:
    """github.com/me/models (my fork) and github.com/up/models (upstream), as local bare repos that
    the GitHub URLs are rewritten to; upstream/main fetched."""
    hub = tmp_path / "github"
    for name in ("me", "up"):
        gitpython.Repo.init(hub / name / "models.git", bare=True)
    for prefix in ("https://github.com/", "git@github.com:"):
        repo.git.config("--add", f"url.file://{hub}/.insteadOf", prefix)
    repo.create_remote("origin", "https://github.com/me/models.git")
    repo.create_remote("upstream", "git@github.com:up/models.git")
    repo.git.push("upstream", "main")
    repo.git.fetch("upstream")
    return hub


def test_open_pr_from_a_fork_is_fork_safe(repo, github, fake_gh):
    (fake_gh.parent / "gh.log.open").write_text(json.dumps([{"number": 3, "head": DEFAULT_BRANCH, "owner": "someone", "cross": True}]))
    args = ["--base", "upstream/main", "--push", "origin", "--open-pr", "--draft", "--label", "pp", "--label", "bot"]
    first = invoke(repo.working_tree_dir, *args)
    assert first.exit_code == 0, first.output
    listed, created = calls(fake_gh)
    assert listed["args"][:6] == ["pr", "list", "--repo", "up/models", "--head", DEFAULT_BRANCH]
    args_ = created["args"]
    assert args_[:6] == ["pr", "create", "--repo", "up/models", "--head", f"me:{DEFAULT_BRANCH}"]
    assert args_[args_.index("--base") + 1] == "main" and "--draft" in args_
    assert [args_[i + 1] for i, a in enumerate(args_) if a == "--label"] == ["pp", "bot"]
    assert gitpython.Repo(github / "me/models.git").heads[DEFAULT_BRANCH].commit == repo.heads[DEFAULT_BRANCH].commit
    second = invoke(repo.working_tree_dir, *args)
    assert second.exit_code == 0, second.output
    edited = calls(fake_gh)[-1]["args"]
    assert edited[:5] == ["pr", "edit", "8", "--repo", "up/models"]
    assert [edited[i + 1] for i, a in enumerate(edited) if a == "--add-label"] == ["pp", "bot"]


def test_pr_repo_option_picks_the_target(repo, github, fake_gh):
    result = invoke(repo.working_tree_dir, "--push", "origin", "--open-pr", "--pr-repo", "up/models")
    assert result.exit_code == 0, result.output
    created = calls(fake_gh)[-1]["args"]
    assert created[:6] == ["pr", "create", "--repo", "up/models", "--head", f"me:{DEFAULT_BRANCH}"]
    bad = invoke(repo.working_tree_dir, "--push", "origin", "--open-pr", "--pr-repo", "not a repo")
    assert bad.exit_code == 2 and "--pr-repo must look like OWNER/NAME" in bad.output
