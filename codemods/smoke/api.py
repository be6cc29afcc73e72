"""`run_smoke`: choose the tiers, map the files to architectures, run each tier, collect one report."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path

from .errors import SetupError, UsageError
from .launch import find_machine
from .records import SmokeReport
from .targets import select_targets
from .tier_contract import UserConfig, run_contract
from .tier_engine import run_engine, skipped, version_note
from .tier_static import run_static
from .tiers import Machine, NoVllmPython, Tier, plan_tiers

DEFAULT_PP_SIZES = (2, 3)
ENGINE_PP = 2


def run_smoke(
    paths: Sequence[Path | str],
    *,
    tier: Tier | str | None = None,
    arch: str | None = None,
    python: Path | str | None = None,
    config: Path | str | None = None,
    pp_sizes: tuple[int, ...] = DEFAULT_PP_SIZES,
    allow_skip: bool = False,
    timeout: float | None = None,
    base: str = "HEAD",
) -> SmokeReport:
    """Smoke the changed model files `paths` (or architecture `arch` of the installed vLLM).

    `tier`: the highest tier to run (tiers are cumulative); None: the highest this machine can
    run. `python`: a Python with vLLM (default: this one if it has vLLM, else the managed env).
    `config`: a folder with a config.json for the architectures it lists. `timeout`: seconds per
    harness process (default: scaled to the work). `base`: the git revision the static tier
    diffs against. Raises SetupError (no usable Python with vLLM for the tiers asked for, the
    harness cannot start) and UsageError (nothing to smoke, a bad --config).
    """
    _check_numbers(timeout, pp_sizes)
    start = time.monotonic()
    files = [Path(p) for p in paths]
    requested = Tier.parse(tier) if isinstance(tier, str) else tier
    user_config = _user_config(Path(config)) if config else None
    _check_request(files, arch, user_config)
    machine = _machine(requested, Path(python) if python else None)
    try:
        tiers = plan_tiers(requested, machine)
    except NoVllmPython as error:
        raise SetupError(str(error)) from None
    targets = select_targets(files, arch, machine.registry) if tiers.run[-1] > Tier.STATIC else []
    report = SmokeReport(
        tiers=[t.label for t in tiers.run],
        not_run={t.label: why for t, why in tiers.not_run.items()},
        environment=_environment(machine),
        allow_skip=allow_skip,
    )
    for current in tiers.run:
        if current is Tier.STATIC:
            report.records.extend(run_static(files, base))
        elif current is Tier.CONTRACT:
            report.records.extend(run_contract(targets, machine, pp_sizes=pp_sizes, timeout=timeout, config=user_config))
        elif current in tiers.skipped:
            report.records.extend(skipped(targets, tiers.skipped[current], ENGINE_PP))
        else:
            report.records.extend(run_engine(targets, machine, pp=ENGINE_PP, timeout=timeout, config=user_config))
            engine = machine.engine_machine
            if engine and (other := version_note(machine, engine)):
                report.notes.append(f"the engine tier ran on {other}: a file that does not run there is skipped")
    report.duration_s = time.monotonic() - start
    return report


def _check_request(files: list[Path], arch: str | None, config: UserConfig | None) -> None:
    if not files and not arch:
        raise UsageError("name changed model files, or an architecture with --arch")
    not_files = [str(f) for f in files if not f.is_file()]
    if not_files:
        raise UsageError(f"not a file (smoke takes changed model files): {', '.join(not_files)}")
    if config and arch and not config.covers(arch):
        raise UsageError(f"{config.source} does not list {arch} in its architectures")


def _check_numbers(timeout: float | None, pp_sizes: tuple[int, ...]) -> None:
    """A timeout that is not a positive finite number of seconds would fail (or never end) every
    check; a PP size below 2 splits nothing."""
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout:g}")
    if not pp_sizes or any(isinstance(size, bool) or not isinstance(size, int) or size < 2 for size in pp_sizes):
        raise UsageError(f"PP sizes must be whole numbers of at least 2, not {list(pp_sizes)}")


def _machine(requested: Tier | None, python: Path | None) -> Machine:
    """What this machine offers; the static tier alone needs no Python with vLLM (no probe)."""
    if requested is Tier.STATIC:
        return Machine(why_no_python="not needed for the static tier")
    return find_machine(python, engine=requested in (None, Tier.ENGINE))


def _user_config(folder: Path) -> UserConfig:
    try:
        values = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as error:
        raise UsageError(f"--config {folder}: cannot read config.json: {error}") from None
    if not values.get("architectures"):
        raise UsageError(f"--config {folder}: config.json names no architectures")
    return UserConfig(str(folder / "config.json"), values)


def _environment(machine: Machine) -> dict[str, object]:
    if machine.python is None:
        return {"python": None, "why_no_python": machine.why_no_python}
    engine = machine.engine_machine
    return {
        "python": str(machine.python),
        "vllm": machine.vllm,
        "torch": machine.torch,
        "cuda_devices": machine.cuda_devices,
        "cpu_kernels": machine.cpu_kernels,
        "contract_device": machine.contract_device,
        "engine_device": machine.engine_device,
        "engine": engine and {"python": str(engine.python), "vllm": engine.vllm, "build": engine.build,
                              "torch": engine.torch, "device": engine.own_engine_device},
    }
