"""The static tier on the bundled example tree (our own vLLM-style models) in a throwaway git repo."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from contractfix import engine
from contractfix.config import Options
from contractfix.demo import copy_example
from contractfix.findings import Finding
from contractfix.smoke.records import Status
from contractfix.smoke.tier_static import run_static, stray_lines

MODELS = Path("vllm/model_executor/models")
BOT = git.Actor("smoke test", "smoke@example.invalid")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The example tree, committed: step_lite.py (PP001) and gemma_lite.py (PP002) are broken."""
    root = copy_example(tmp_path / "repo")
    repo = git.Repo.init(root)
    repo.index.add([str(p.relative_to(root)) for p in root.rglob("*.py")])
    repo.index.commit("example", author=BOT, committer=BOT)
    return root


def _checks(records, path: Path) -> dict[str, object]:
    return {r.check: r for r in records if r.path == str(path.resolve())}


def test_a_broken_file_fails_the_contract_check(tree: Path) -> None:
    step = tree / MODELS / "step_lite.py"
    checks = _checks(run_static([step]), step)
    assert checks["compile"].status is Status.PASS
    assert checks["contract-check"].status is Status.FAIL
    assert "PP001" in checks["contract-check"].error and checks["contract-check"].keys == {"findings": ["residual"]}
    assert checks["diff-scope"].status is Status.PASS and "unchanged" in checks["diff-scope"].reason


def test_fixed_files_pass_and_their_diff_is_only_the_fix(tree: Path) -> None:
    paths = [tree / MODELS / "step_lite.py", tree / MODELS / "gemma_lite.py"]
    assert len(engine.fix(paths, Options()).changes) == 2
    records = run_static(paths)
    assert [(r.check, r.status) for r in records] == [
        (check, Status.PASS) for _ in paths for check in ("compile", "contract-check", "diff-scope")]
    assert all("every change since HEAD is a fix's" in r.reason for r in records if r.check == "diff-scope")


TIED = '''from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import PPMissingLayer


class TiedModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        if get_pp_group().is_first_rank:
            self.embed_tokens = Embedding(config)
        else:
            self.embed_tokens = PPMissingLayer()


class TiedForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        self.model = TiedModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = Head(config)
            if config.tie_word_embeddings:
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.model(input_ids, positions, intermediate_tensors)
'''


def test_an_unsafe_fix_is_a_fix_too(tree: Path) -> None:
    tied = tree / MODELS / "tied_lite.py"
    tied.write_text(TIED)
    git.Repo(tree).index.add([str(tied.relative_to(tree))])
    git.Repo(tree).index.commit("tied", author=BOT, committer=BOT)
    assert len(engine.fix([tied], Options(unsafe_fixes=True)).changes) == 1
    checks = _checks(run_static([tied]), tied)
    assert checks["contract-check"].status is Status.PASS
    assert checks["diff-scope"].status is Status.PASS, checks["diff-scope"].error


def test_a_change_no_fix_makes_is_reported_with_its_lines(tree: Path) -> None:
    step = tree / MODELS / "step_lite.py"
    engine.fix([step], Options())
    lines = step.read_text().splitlines(keepends=True)
    lines[0] = "# an unrelated edit\n"
    step.write_text("".join(lines))
    checks = _checks(run_static([step]), step)
    assert checks["contract-check"].status is Status.PASS
    assert checks["diff-scope"].status is Status.FAIL
    assert checks["diff-scope"].error == "lines changed since HEAD that no fix touches: 1"


def test_syntax_errors_and_untracked_files(tree: Path) -> None:
    new = tree / MODELS / "new_model.py"
    new.write_text("class Broken(:\n")
    checks = _checks(run_static([new]), new)
    assert checks["compile"].status is Status.FAIL and "SyntaxError" in checks["compile"].error
    assert checks["diff-scope"].status is Status.NA and "not tracked by git" in checks["diff-scope"].reason


def test_stray_lines_compares_against_the_planned_fix() -> None:
    before = b"a\nb\nc\nd\n"
    planned = b"a\nB\nc\nd\n"
    assert stray_lines(before, b"a\nB2\nc\nd\n", planned) == []
    assert stray_lines(before, b"a\nB\nc\nD\n", planned) == [4]
    assert stray_lines(before, b"x\nb\nc\nd\n", before) == [1]


@pytest.mark.parametrize("latent", [True, False])
def test_only_a_latent_finding_is_left_alone_by_the_contract_check(tree: Path, monkeypatch, latent: bool) -> None:
    """A latent finding (unreachable in the release: PP011's relative index before the opt-in)
    cannot fail at run time, so it does not fail the check; any other finding does."""
    step = tree / MODELS / "step_lite.py"
    engine.fix([step], Options())
    real = engine.check

    def with_one_more(paths, options):
        report = real(paths, options)
        report.findings.append(Finding("PP011", "aux-states-not-relayed", step.resolve(), 1, 0, "StepLite", "latent: x", latent=latent))
        return report

    monkeypatch.setattr(engine, "check", with_one_more)
    check = _checks(run_static([step]), step)["contract-check"]
    assert check.status is (Status.PASS if latent else Status.FAIL)
    assert ("1 latent here" in check.reason) is latent


def test_a_finding_of_another_family_is_counted_not_failed(tree: Path) -> None:
    """The smoke proves the pipeline-parallel contract: a layer built without a prefix (PF001) in a
    file whose PP contract holds passes the contract check, and the reason counts it."""
    lite = tree / MODELS / "prefix_lite.py"
    lite.write_text(
        "from torch import nn\n\n"
        "from vllm.model_executor.layers.linear import RowParallelLinear\n\n\n"
        "class LiteMLP(nn.Module):\n"
        "    def __init__(self, hidden_size, quant_config=None, prefix=\"\"):\n"
        "        super().__init__()\n"
        "        self.down_proj = RowParallelLinear(hidden_size, hidden_size, quant_config=quant_config)\n"
    )
    git.Repo(tree).index.add([str(lite.relative_to(tree))])
    git.Repo(tree).index.commit("a layer without a prefix", author=BOT, committer=BOT)
    check = _checks(run_static([lite]), lite)["contract-check"]
    assert check.status is Status.PASS, check.error
    assert "1 of other families here" in check.reason
