"""The engine tier and the contract tier's CUDA path, on a machine with >= 2 CUDA GPUs (else skipped)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix.smoke import Status, run_smoke
from contractfix.smoke.tiers import Machine

from .vllm_copies import make_copy

pytestmark = [pytest.mark.vllm, pytest.mark.gpu]


@pytest.fixture(scope="module")
def gpus(vllm_machine: Machine) -> Machine:
    if vllm_machine.engine_device != "cuda":
        pytest.skip(f"needs >= 2 CUDA GPUs; {vllm_machine.python} sees {vllm_machine.cuda_devices}")
    return vllm_machine


def _by_check(report, arch: str) -> dict:
    return {(r.tier, r.check, r.pp): r for r in report.records if r.arch == arch}


def test_engine_pp2_generates_the_same_tokens_as_pp1(gpus: Machine, tmp_path: Path) -> None:
    copy = make_copy(gpus.vllm_dir, tmp_path / "tree", "llama", "unchanged")
    report = run_smoke([copy.path], tier="engine", arch=copy.arch)
    checks = _by_check(report, copy.arch)
    assert checks[("engine", "generate", 1)].status is Status.PASS
    assert checks[("engine", "generate", 2)].status is Status.PASS
    assert checks[("engine", "tokens-equal-pp1", 2)].status is Status.PASS
    assert checks[("contract", "chain-equals-pp1", 2)].device == "cuda"
    assert report.ok, report.summary()


def test_engine_pp2_fails_on_a_missing_residual(gpus: Machine, tmp_path: Path) -> None:
    copy = make_copy(gpus.vllm_dir, tmp_path / "tree", "llama", "no-residual")
    report = run_smoke([copy.path], tier="engine", arch=copy.arch)
    checks = _by_check(report, copy.arch)
    assert checks[("engine", "generate", 1)].status is Status.PASS
    assert checks[("engine", "generate", 2)].status is Status.FAIL
    assert "residual" in checks[("engine", "generate", 2)].error
    assert checks[("engine", "tokens-equal-pp1", 2)].status is Status.SKIP
