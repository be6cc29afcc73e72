"""The contract tier's drafter check against real vLLM: a draft head built as the last PP rank
builds it, on broken copies of vLLM's own ErnieMTP (PP010's two shapes) and on the upstream file.

PP010 is report-only (no fix), so the passing case is the released file itself. One `contractfix
smoke` run covers all copies: one harness process.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from contractfix.cli import app

from .vllm_copies import DRAFT_MUTATIONS, make_copy

pytestmark = [pytest.mark.vllm, pytest.mark.xdist_group("smoke-drafters")]  # one worker builds its copies once

runner = CliRunner()
MODEL = "ernie_mtp"
CASES = (*DRAFT_MUTATIONS, "unchanged")
ERRORS = {
    "embed-by-rank": ("build the drafter at rank {rank} of {pp}: AttributeError: 'PPMissingLayer' object has no "
                      "attribute 'weight'", "self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)"),
    "first-rank-embed": ("rank {rank} of {pp} forward(input_ids, positions, hidden_states): AssertionError",
                         "assert inputs_embeds is not None"),
}


@pytest.fixture(scope="session")
def drafters(vllm_machine, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, int, dict]:
    """(copies by mutation, exit code, report) of one contract smoke of every copy."""
    copies = {m: make_copy(vllm_machine.vllm_dir, tmp_path_factory.mktemp(f"{MODEL}-{m}"), MODEL, m) for m in CASES}
    out = tmp_path_factory.mktemp("reports") / "drafters.json"
    result = runner.invoke(app, ["smoke", "--tier", "contract", "--json", str(out), *(str(c.path) for c in copies.values())])
    assert out.exists(), result.output
    return copies, result.exit_code, json.loads(out.read_text())


def _records(report: dict, path) -> dict[tuple, dict]:
    return {(r["tier"], r["check"], r["pp"]): r for r in report["records"] if r["path"] == str(path)}


def test_the_smoke_fails_on_the_broken_drafters(drafters) -> None:
    _, code, report = drafters
    assert code == 1 and report["ok"] is False
    assert report["environment"]["vllm"] == "0.33.0" and report["environment"]["contract_device"] == "cpu"


@pytest.mark.parametrize("mutation", DRAFT_MUTATIONS)
def test_a_drafter_that_tests_its_rank_fails_as_the_last_rank(mutation, drafters) -> None:
    copies, _, report = drafters
    copy = copies[mutation]
    records = _records(report, copy.path)
    build = records[("contract", "build", 1)]
    assert build["status"] == "pass" and str(copy.path) in build["reason"], "at PP=1 the first rank is the last"
    assert "PP010" in records[("static", "contract-check", None)]["error"]
    for pp in (2, 3):
        check = records[("contract", "drafter-last-rank", pp)]
        error, line = ERRORS[mutation]
        assert check["status"] == "fail" and check["arch"] == "ErnieMTPModel", check
        assert check["error"].startswith(error.format(rank=pp - 1, pp=pp)), check["error"]
        assert f"{copy.path}:" in check["error"] and line in check["error"]


def test_the_upstream_drafter_passes_as_the_last_rank_of_2_and_3(drafters) -> None:
    copies, _, report = drafters
    copy = copies["unchanged"]
    assert copy.path.read_text() == copy.original
    records = _records(report, copy.path)
    expected = {("static", c, None) for c in ("compile", "contract-check", "diff-scope")} | {
        ("contract", "build", 1), ("contract", "drafter-last-rank", 2), ("contract", "drafter-last-rank", 3)}
    assert set(records) == expected
    assert {key: r["status"] for key, r in records.items()} == {key: "pass" for key in expected}
    for pp in (2, 3):
        reason = records[("contract", "drafter-last-rank", pp)]["reason"]
        assert re.fullmatch(rf"built as rank {pp - 1} of {pp}: max \|logits - PP=1 drafter's\| = 0\.00e\+00", reason)
