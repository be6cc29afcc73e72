"""The contract tier against real vLLM (the managed smoke environment), on broken and fixed copies
of vLLM's own model files.

Each copy lives in a temp tree shaped like a vLLM checkout (the installed `models/` folder, copied
at test time: no vLLM code is stored in this repo), committed to a throwaway git repo so that the
static tier can check the fix's diff. One `contractfix smoke` run covers every broken copy, and one
every fixed copy: one harness process each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix.cli import app

from .vllm_copies import GENERIC, MUTATIONS, ONLY, UNSAFE, UNTIED, Copy, make_copy

pytestmark = [pytest.mark.vllm, pytest.mark.xdist_group("smoke-integration")]  # one worker builds its copies once

runner = CliRunner()
CASES = [(model, mutation) for mutation in MUTATIONS for model in ONLY.get(mutation, GENERIC)]


@pytest.fixture(scope="session")
def copies(vllm_machine, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One broken copy per (model, mutation), each in its own committed vLLM-shaped tree."""
    installed = vllm_machine.vllm_dir
    made = {}
    for model, mutation in CASES:
        made[(model, mutation)] = make_copy(installed, tmp_path_factory.mktemp(f"{model}-{mutation}"), model, mutation)
    return made


def _smoke(paths: list[Path], out: Path, *extra: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["smoke", "--tier", "contract", "--json", str(out), *extra, *map(str, paths)])
    assert out.exists(), result.output
    return result.exit_code, json.loads(out.read_text())


@pytest.fixture(scope="session")
def broken(copies, tmp_path_factory) -> tuple[int, dict]:
    out = tmp_path_factory.mktemp("reports") / "broken.json"
    return _smoke([c.path for c in copies.values()], out)


@pytest.fixture(scope="session")
def fixed(copies, broken, tmp_path_factory) -> tuple[int, dict]:
    """`contractfix fix` on every broken copy (after the broken run), then one smoke of them all.
    Exit 1 is fine: a real file may hold findings of its own (granite's latent PP011); what the
    fix must do is restore vLLM's text (test_each_fixed_copy_passes_every_check_at_pp_2_and_3)."""
    for copy in copies.values():
        unsafe = ["--unsafe-fixes"] if copy.mutation in UNSAFE else []
        # The PP bug seeded alone: vLLM's own files hold PF findings too, which `fix` fixes by default.
        result = runner.invoke(app, ["fix", "--select", "PP", *unsafe, str(copy.path)])
        assert result.exit_code in (0, 1) and " 0 error(s)" in result.output, result.output
    out = tmp_path_factory.mktemp("reports") / "fixed.json"
    return _smoke([c.path for c in copies.values()], out)


def _records(report: dict, copy: Copy, **match) -> dict[tuple, dict]:
    return {
        (r["tier"], r["check"], r["pp"]): r
        for r in report["records"]
        if r["path"] == str(copy.path) and r["arch"] in (copy.arch, "") and all(r[k] == v for k, v in match.items())
    }


def test_broken_copies_fail_the_smoke(broken) -> None:
    code, report = broken
    assert code == 1 and report["ok"] is False
    assert report["tiers"] == ["static", "contract"]
    assert report["environment"]["vllm"] == "0.33.0" and report["environment"]["contract_device"] == "cpu"


@pytest.mark.parametrize(("model", "mutation"), CASES)
def test_the_right_check_fails_with_the_right_error(model, mutation, copies, broken) -> None:
    copy = copies[(model, mutation)]
    records = _records(broken[1], copy)
    status = {key: r["status"] for key, r in records.items()}
    assert status[("contract", "build", 1)] == "pass"
    assert str(copy.path) in records[("contract", "build", 1)]["reason"], "the changed file is the one that ran"
    assert status[("static", "compile", None)] == "pass"
    for pp in (2, 3):
        factory, chain = records[("contract", "factory-keys", pp)], records[("contract", "chain-equals-pp1", pp)]
        if mutation == "no-residual":
            assert factory["status"] == "fail" and "sent, not allocated: ['residual']" in factory["error"]
            assert factory["keys"] == {"allocated": ["hidden_states"], "sent": ["hidden_states", "residual"]}
            assert chain["status"] == "fail" and "rank 1 forward: KeyError: 'residual'" in chain["error"]
            assert f'{copy.path}:' in chain["error"] and 'intermediate_tensors["residual"]' in chain["error"]
        elif mutation == "extra-key":
            assert factory["status"] == "fail" and "allocated, not sent: ['aux']" in factory["error"]
            assert chain["status"] == "fail" and "KeyError: 'aux'" in chain["error"]
        else:
            assert (factory["status"], chain["status"]) == ("pass", "pass")
            assert status[("contract", "keys-read", pp)] == "pass"
        tied = records[("contract", "tied-embeddings", pp)]
        if mutation == "first-rank-embedding":
            assert tied["status"] == "fail" and f"build rank {pp - 1} of {pp} with tie_word_embeddings" in tied["error"]
            assert "AttributeError" in tied["error"] and "tie_weights(self.model.embed_tokens)" in tied["error"]
        elif copy.arch in UNTIED:
            assert tied["status"] == "n/a" and "does not tie" in tied["reason"], tied
        else:
            assert tied["status"] == "pass", tied
        weights = records[("contract", "weights-load", pp)]
        if mutation == "no-weight-guard":
            assert weights["status"] == "fail" and "load_weights (the full model's" in weights["error"], weights
            assert "KeyError: 'layers." in weights["error"] and "param = params_dict[name]" in weights["error"]
            assert f"{copy.path}:" in weights["error"]
        else:
            assert weights["status"] == "pass", weights
    entry = records[("contract", "entry-without-intermediate-tensors", 1)]
    if mutation == "no-default":
        assert entry["status"] == "fail"
        assert "TypeError" in entry["error"] and "intermediate_tensors" in entry["error"]
    else:
        assert entry["status"] == "pass"


def test_fixed_copies_pass(fixed) -> None:
    code, report = fixed
    assert code == 0 and report["ok"] is True, json.dumps(report["records"], indent=1)
    assert not [r for r in report["records"] if r["status"] == "skip"]
    apart = {(r["arch"], r["check"]) for r in report["records"] if r["status"] == "n/a"}
    untied = {(arch, check) for arch, check in apart if arch in UNTIED and check == "tied-embeddings"}
    assert {arch for arch, _ in apart - untied} <= {
        "LlamaBidirectionalModel", "LlamaBidirectionalForSequenceClassification"}


@pytest.mark.parametrize(("model", "mutation"), CASES)
def test_each_fixed_copy_passes_every_check_at_pp_2_and_3(model, mutation, copies, fixed) -> None:
    copy = copies[(model, mutation)]
    assert copy.path.read_text() == copy.original, "the fix restored vLLM's own text"
    records = _records(fixed[1], copy)
    expected = {("static", c, None) for c in ("compile", "contract-check", "diff-scope")} | {
        ("contract", c, 1) for c in ("build", "entry-without-intermediate-tensors")} | {
        ("contract", c, pp) for pp in (2, 3)
        for c in ("factory-keys", "keys-read", "chain-equals-pp1", "weights-load", "tied-embeddings")}
    assert set(records) == expected
    untied = copy.arch in UNTIED
    assert {key: r["status"] for key, r in records.items()} == {
        key: "n/a" if untied and key[1] == "tied-embeddings" else "pass" for key in expected}
    sent = ["hidden_states", "residual"] if model in GENERIC else ["hidden_states"]  # granite sends no residual
    assert records[("contract", "keys-read", 3)]["keys"]["received"] == sent
    scope = records[("static", "diff-scope", None)]["reason"]
    assert scope == "every change since HEAD is a fix's"
    assert re.search(r"max \|PP chain - PP=1\| = 0\.00e\+00", records[("contract", "chain-equals-pp1", 3)]["reason"])


def test_a_class_vllm_cannot_build_from_its_config_is_not_applicable(copies, fixed) -> None:
    copy = copies[("llama", "no-residual")]
    bidirectional = [r for r in fixed[1]["records"]
                     if r["path"] == str(copy.path) and r["arch"] == "LlamaBidirectionalModel"]
    assert [(r["check"], r["status"]) for r in bidirectional] == [("build", "n/a")]
    assert "vLLM's own module does not build this architecture" in bidirectional[0]["reason"]
    assert "requires a 'pooling' field" in bidirectional[0]["error"]
