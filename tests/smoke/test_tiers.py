"""Tier selection: the default goes as high as the machine allows, explicit tiers report skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix.smoke.tiers import Machine, NoVllmPython, Tier, blocker, plan_tiers

NO_VLLM = Machine(why_no_python="no Python with vLLM: run `contractfix smoke --setup`")
CPU_BOX = Machine(python=Path("/py"), vllm="0.33.0", vllm_dir=Path("/site/vllm"))
ONE_GPU = Machine(python=Path("/py"), vllm="0.33.0", vllm_dir=Path("/site/vllm"), cuda_devices=1)
TWO_GPUS = Machine(python=Path("/py"), vllm="0.33.0", vllm_dir=Path("/site/vllm"), cuda_devices=2)
CPU_KERNELS = Machine(python=Path("/py"), vllm="0.32.0", vllm_dir=Path("/site/vllm"), cpu_kernels=True)
WITH_CPU_ENGINE = Machine(python=Path("/py"), vllm="0.33.0", vllm_dir=Path("/site/vllm"), engine=CPU_KERNELS)


@pytest.mark.parametrize(
    ("machine", "top", "not_run"),
    [
        (NO_VLLM, Tier.STATIC, {Tier.CONTRACT, Tier.ENGINE}),
        (CPU_BOX, Tier.CONTRACT, {Tier.ENGINE}),
        (ONE_GPU, Tier.CONTRACT, {Tier.ENGINE}),
        (TWO_GPUS, Tier.ENGINE, set()),
        (CPU_KERNELS, Tier.ENGINE, set()),
        (WITH_CPU_ENGINE, Tier.ENGINE, set()),
    ],
)
def test_default_is_the_highest_runnable_tier(machine: Machine, top: Tier, not_run: set[Tier]) -> None:
    plan = plan_tiers(None, machine)
    assert plan.run[-1] is top
    assert plan.run == tuple(t for t in Tier if t <= top)
    assert set(plan.not_run) == not_run
    assert all(plan.not_run.values()), "every tier not run says why"
    assert not plan.skipped


def test_reasons_name_what_is_missing() -> None:
    assert "contractfix smoke --setup" in blocker(Tier.CONTRACT, NO_VLLM)
    engine = blocker(Tier.ENGINE, ONE_GPU)
    assert "2 CUDA GPUs (found 1)" in engine and "CPU kernels" in engine
    assert blocker(Tier.STATIC, NO_VLLM) is None


def test_explicit_tier_the_hardware_cannot_run_is_skipped_with_its_reason() -> None:
    plan = plan_tiers(Tier.ENGINE, CPU_BOX)
    assert plan.run == (Tier.STATIC, Tier.CONTRACT, Tier.ENGINE)
    assert set(plan.skipped) == {Tier.ENGINE}
    assert "found 0" in plan.skipped[Tier.ENGINE]


def test_explicit_lower_tier_runs_only_up_to_it() -> None:
    assert plan_tiers(Tier.CONTRACT, TWO_GPUS).run == (Tier.STATIC, Tier.CONTRACT)
    assert plan_tiers(Tier.STATIC, NO_VLLM).run == (Tier.STATIC,)


def test_explicit_vllm_tier_without_a_vllm_python_is_a_setup_error() -> None:
    with pytest.raises(NoVllmPython, match="--setup"):
        plan_tiers(Tier.CONTRACT, NO_VLLM)


def test_devices() -> None:
    assert CPU_BOX.contract_device == "cpu" and CPU_BOX.engine_device is None
    assert ONE_GPU.contract_device == "cuda"
    assert TWO_GPUS.engine_device == "cuda"
    assert CPU_KERNELS.engine_device == "cpu" and CPU_KERNELS.engine_machine is CPU_KERNELS
    assert WITH_CPU_ENGINE.engine_device == "cpu" and WITH_CPU_ENGINE.engine_machine is CPU_KERNELS
    assert WITH_CPU_ENGINE.contract_device == "cpu" and WITH_CPU_ENGINE.python == Path("/py")
    assert Machine(python=Path("/py"), cuda_devices=2, engine=CPU_KERNELS).engine_device == "cuda", "GPUs first"
    assert CPU_BOX.registry == Path("/site/vllm/model_executor/models/registry.py")


def test_tier_names() -> None:
    assert Tier.parse("Contract") is Tier.CONTRACT
    with pytest.raises(ValueError, match="static, contract, engine"):
        Tier.parse("gpu")
