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
from tests.gitrepo import GEMMA_LITE, STEP_LITE

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
