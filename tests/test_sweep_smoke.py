"""`sweep --smoke TIER`: the smoke runs on the fixed worktree; its verdict goes to the PR body and gates the push."""

from __future__ import annotations

from pathlib import Path

import git as gitpython
import pytest
from typer.testing import CliRunner

from contractfix import sweep as sweep_mod
from contractfix.cli import app
from contractfix.smoke import CheckRecord, SmokeReport, Status
from contractfix.sweep import DEFAULT_BRANCH, SweepRequest, sweep
from tests.gitrepo import GEMMA_LITE, STEP_LITE

pytestmark = pytest.mark.usefixtures("git_env")


def test_static_tier_passes_on_the_fixed_tree(repo, remote, tmp_path):
    body = tmp_path / "pr.md"
    result = sweep(SweepRequest(repo=Path(repo.working_tree_dir), smoke="static", push=str(remote), pr_body=body))
    assert result.smoke.ok and result.smoke.tiers == ["static"]
    checked = {(Path(r.path).name, r.check) for r in result.smoke.records if r.status is Status.PASS}
    assert checked == {(Path(f).name, c) for f in (GEMMA_LITE, STEP_LITE) for c in ("compile", "contract-check", "diff-scope")}
    assert result.pushed and result.exit_code == 0
    assert "## Smoke test\n\nThe smoke run passed:" in body.read_text()


class FailingSmoke:
    """Stands in for `run_smoke` (no vLLM here): records its call and the files it was given, fails."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, paths, *, tier, base):
        self.calls.append({"tier": tier, "base": base, "files": {Path(p).name: Path(p).read_text() for p in paths}})
        record = CheckRecord("StepLiteForCausalLM", "contract", "pp-forward", Status.FAIL, error="KeyError: 'residual'", pp=2)
        return SmokeReport(records=[record], tiers=["static", "contract"])


def test_failed_smoke_stops_push_and_pr(repo, remote, tmp_path, monkeypatch):
    stand_in = FailingSmoke()
    monkeypatch.setattr(sweep_mod, "run_smoke", stand_in)
    body = tmp_path / "pr.md"
    args = ["sweep", repo.working_tree_dir, "--smoke", "contract", "--push", str(remote), "--pr-body", str(body)]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    [call] = stand_in.calls
    assert (call["tier"], call["base"]) == ("contract", repo.head.commit.hexsha)
    assert '["hidden_states", "residual"]' in call["files"]["step_lite.py"]
    assert "FAIL  contract StepLiteForCausalLM PP=2 pp-forward" in result.output
    assert "not pushed, no PR opened" in result.output
    assert DEFAULT_BRANCH in repo.heads and not gitpython.Repo(remote).heads
    assert "The smoke run FAILED:" in body.read_text() and "KeyError: 'residual'" in body.read_text()


def test_unknown_tier_exits_2(repo):
    result = CliRunner().invoke(app, ["sweep", repo.working_tree_dir, "--smoke", "gpu-farm"])
    assert result.exit_code == 2 and "unknown tier" in result.output
    assert DEFAULT_BRANCH not in repo.heads
