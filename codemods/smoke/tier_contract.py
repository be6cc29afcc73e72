"""The contract tier, contractfix's side: plan one harness process for all targets, read its records.

Targets are grouped into units by the changed files they load (one vLLM tree, or one lone file,
per unit); the harness runs the units one after another, swapping the overridden modules in
between. Any check the harness did not report (timeout, crash) is a failure with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from .launch import run_harness
from .records import CheckRecord, Status
from .targets import Target
from .tiers import Machine

TIER = "contract"
PP_CHECKS = ("factory-keys", "keys-read", "chain-equals-pp1", "weights-load", "tied-embeddings")
ENTRY_CHECKS = (("build", 1), ("entry-without-intermediate-tensors", 1))
DRAFT_CHECKS = ("drafter-last-rank",)
"""A draft head is built whole on the last rank, not split: its checks replace the pipeline's."""
BASE_TIMEOUT_S = 120.0
PER_TARGET_S = 90.0


@dataclass(frozen=True)
class UserConfig:
    """A config.json given with `--config`: used for the architectures it lists."""

    source: str
    values: dict

    def covers(self, arch: str) -> bool:
        return arch in self.values.get("architectures", ())


def expected_checks(pp_sizes: tuple[int, ...], draft: bool = False) -> list[tuple[str, int]]:
    if draft:
        return [("build", 1), *((check, size) for size in pp_sizes for check in DRAFT_CHECKS)]
    return [*ENTRY_CHECKS, *((check, size) for size in pp_sizes for check in PP_CHECKS)]


def select_skips(targets: list[Target], tier: str) -> list[CheckRecord]:
    """A skip record for every target that cannot be smoked (decided before running anything)."""
    return [
        CheckRecord(t.arch, tier, "select", Status.SKIP, reason=t.skip, path=str(t.path) if t.path else None)
        for t in targets
        if t.skip
    ]


def plan(targets: list[Target], device: str, pp_sizes: tuple[int, ...], config: UserConfig | None) -> dict:
    units: dict[tuple, list[dict]] = {}
    for target in targets:
        units.setdefault(target.overrides, []).append(_target_json(target, config))
    return {
        "device": device,
        "pp_sizes": list(pp_sizes),
        "units": [{"overrides": dict(overrides), "targets": items} for overrides, items in units.items()],
    }


def _target_json(target: Target, config: UserConfig | None) -> dict:
    given = config if config and config.covers(target.arch) else None
    return {
        "arch": target.arch,
        "module": target.module,
        "cls": target.cls,
        "path": str(target.path) if target.path else None,
        "config": given.values if given else None,
        "config_source": given.source if given else None,
        "notes": target_notes(target),
        "draft": target.draft.to_json() if target.draft else None,
    }


def target_notes(target: Target) -> list[str]:
    """What the report should say about how the target was chosen."""
    aliases = [f"also registered as {', '.join(target.aliases)}"] if target.aliases else []
    return [*target.notes, *aliases]


def run_contract(targets: list[Target], machine: Machine, *, pp_sizes: tuple[int, ...] = (2, 3),
                 timeout: float | None = None, config: UserConfig | None = None) -> list[CheckRecord]:
    records = select_skips(targets, TIER)
    runnable = [t for t in targets if not t.skip]
    if not runnable:
        return records
    limit = timeout or BASE_TIMEOUT_S + PER_TARGET_S * len(runnable)
    assert machine.python is not None, "plan_tiers runs this tier only with a Python with vLLM"
    result = run_harness(machine.python, "contract", plan(runnable, machine.contract_device, pp_sizes, config),
                         timeout=limit)
    records.extend(result.records)
    records.extend(missing(runnable, result.records, pp_sizes, result.problem, machine))
    return records


def missing(targets: list[Target], seen: list[CheckRecord], pp_sizes: tuple[int, ...], problem: str,
            machine: Machine) -> list[CheckRecord]:
    """A failure for each expected check the harness did not report. A target whose `build`
    did not pass has no other checks (the harness says why in that record)."""
    have = {(r.arch, r.path, r.check, r.pp): r for r in seen}
    reason = problem or "the harness did not report this check"
    out = []
    for target in targets:
        path = str(target.path) if target.path else None
        build = have.get((target.arch, path, "build", 1))
        expected = expected_checks(pp_sizes, draft=target.draft is not None)
        wanted = expected if build is None or build.status is Status.PASS else []
        for check, pp in wanted:
            if (target.arch, path, check, pp) not in have:
                out.append(CheckRecord(target.arch, TIER, check, Status.FAIL, reason=reason, pp=pp, path=path,
                                       device=machine.contract_device, error=problem))
    return out
