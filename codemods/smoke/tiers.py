"""The smoke tiers, what each needs, and which ones a run does.

Tiers are cumulative: running a tier runs the ones below it too. Without `--tier`, a run goes as
high as this machine allows and says why it stopped there; a tier asked for explicitly that
the hardware cannot run is reported as skipped, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

from ..vllm_names import REGISTRY
from .errors import UsageError


class Tier(IntEnum):
    STATIC = 1
    CONTRACT = 2
    ENGINE = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, name: str) -> Tier:
        try:
            return cls[name.upper()]
        except KeyError:
            raise UsageError(f"unknown tier {name!r}; use one of: {', '.join(t.label for t in cls)}") from None


@dataclass(frozen=True)
class Machine:
    """What the smoke can use here: a Python with vLLM (or why there is none), GPUs, CPU kernels;
    `engine`: a second Python that runs the engine tier where this one cannot (the managed CPU
    engine environment)."""

    python: Path | None = None
    why_no_python: str = ""
    vllm: str | None = None
    vllm_dir: Path | None = None
    torch: str | None = None
    cuda_devices: int = 0
    cpu_kernels: bool = False
    build: str | None = None
    engine: Machine | None = None

    @property
    def contract_device(self) -> str:
        return "cuda" if self.cuda_devices else "cpu"

    @property
    def own_engine_device(self) -> str | None:
        if self.cuda_devices >= 2:
            return "cuda"
        return "cpu" if self.cpu_kernels else None

    @property
    def engine_machine(self) -> Machine | None:
        """The machine the engine tier runs on: this one (two GPUs or CPU kernels), else `engine`."""
        if self.own_engine_device:
            return self
        return self.engine if self.engine and self.engine.own_engine_device else None

    @property
    def engine_device(self) -> str | None:
        return self.engine_machine.own_engine_device if self.engine_machine else None

    @property
    def registry(self) -> Path | None:
        """The installed vLLM's model registry file."""
        return self.vllm_dir.joinpath(*REGISTRY.parts[1:]) if self.vllm_dir else None


def blocker(tier: Tier, machine: Machine) -> str | None:
    """Why `tier` cannot run on `machine`, or None when it can."""
    if tier is Tier.STATIC:
        return None
    if machine.python is None:
        return machine.why_no_python
    if tier is Tier.ENGINE and machine.engine_device is None:
        return (
            f"needs >= 2 CUDA GPUs (found {machine.cuda_devices}) or a vLLM build with CPU kernels "
            f"(vllm {machine.vllm} at {machine.vllm_dir} has none; `contractfix smoke --setup` makes one)"
        )
    return None


@dataclass(frozen=True)
class TierPlan:
    """`run`: tiers to run, in order; `skipped`: tiers to report as skipped (asked for, cannot run);
    `not_run`: tiers above the default one, with the reason the default stopped below them."""

    run: tuple[Tier, ...]
    skipped: dict[Tier, str] = field(default_factory=dict)
    not_run: dict[Tier, str] = field(default_factory=dict)


class NoVllmPython(RuntimeError):
    """A tier that needs a Python with vLLM was asked for, and there is none."""


def plan_tiers(requested: Tier | None, machine: Machine) -> TierPlan:
    if requested is None:
        top = max(t for t in Tier if blocker(t, machine) is None)
        higher = {t: why for t in Tier if t > top and (why := blocker(t, machine)) is not None}
        return TierPlan(tuple(t for t in Tier if t <= top), not_run=higher)
    if requested > Tier.STATIC and machine.python is None:
        raise NoVllmPython(f"tier {requested.label}: {machine.why_no_python}")
    tiers = tuple(t for t in Tier if t <= requested)
    skipped = {t: why for t in tiers if (why := blocker(t, machine))}
    return TierPlan(tiers, skipped=skipped)
