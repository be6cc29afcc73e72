"""The engine tier: real `vllm.LLM` runs with dummy weights, PP=1 then PP=N, each in its own process.

The greedy token ids must be identical. vLLM starts its own workers, so the changed modules
reach them through the sitecustomize shim (PYTHONPATH) and CONTRACTFIX_SMOKE_OVERRIDES; a private
VLLM_CACHE_ROOT keeps vLLM's model-info cache (keyed by the installed file) out of the way.
It runs under `Machine.engine_machine`: this Python, or the managed CPU engine environment, whose
vLLM may be another release than the one the code is smoked against; then a module that does not
run at PP=1 there is a skip, not a failed fix. A failure's error names the root exception and the
model line (`rootcause`); its `trace` keeps the whole text for the JSON report.
"""

from __future__ import annotations

import json
import os
import re
import tempfile

from .launch import SHIM, run_harness
from .records import CheckRecord, Status
from .rootcause import explain
from .targets import Target
from .tier_contract import UserConfig, select_skips
from .tiers import Machine

TIER = "engine"
OVERRIDES_ENV = "CONTRACTFIX_SMOKE_OVERRIDES"
TIMEOUT_S = 600.0
OUTPUT_LINES = 200
OUTPUT_HEADER = f"--- the run's output (its last {OUTPUT_LINES} lines) ---"
DRAFT_SKIP = "a draft head: the engine tier serves target models (the contract tier's drafter-last-rank covers it)"


def run_engine(targets: list[Target], machine: Machine, *, pp: int = 2, timeout: float | None = None,
               config: UserConfig | None = None) -> list[CheckRecord]:
    records = select_skips(targets, TIER)
    for target in (t for t in targets if not t.skip):
        if target.draft:
            records.extend(skipped([target], DRAFT_SKIP, pp))
        else:
            records.extend(_smoke(target, machine, pp, timeout or TIMEOUT_S, config))
    return records


def skipped(targets: list[Target], reason: str, pp: int = 2) -> list[CheckRecord]:
    """The engine tier was asked for and this machine cannot run it: one skip per target."""
    return [
        CheckRecord(t.arch, TIER, "tokens-equal-pp1", Status.SKIP, reason=t.skip or reason, pp=pp,
                    path=str(t.path) if t.path else None)
        for t in targets
    ]


def _smoke(target: Target, machine: Machine, pp: int, timeout: float, config: UserConfig | None) -> list[CheckRecord]:
    engine = machine.engine_machine
    assert engine is not None and engine.python is not None, "plan_tiers runs this tier only where it can"
    device = engine.own_engine_device
    assert device is not None
    path = str(target.path) if target.path else None
    given = config if config and config.covers(target.arch) else None
    other = version_note(machine, engine)
    records: list[CheckRecord] = []
    tokens: dict[int, list[int] | None] = {}
    for size in (1, pp):
        plan = {
            "device": device,
            "pp": size,
            "target": {"arch": target.arch, "module": target.module, "cls": target.cls, "path": path,
                       "layers": pp, "config": given.values if given else None},
        }
        with tempfile.TemporaryDirectory(prefix="contractfix-vllm-cache-") as cache:
            env = engine_env(target, device, size, cache)
            result = run_harness(engine.python, "engine", plan, timeout=timeout, env=env)
        generate = next((r for r in result.records if r.check == "generate" and r.pp == size), None)
        if generate is None:
            generate = CheckRecord(target.arch, TIER, "generate", Status.FAIL, pp=size, path=path, device=device,
                                   reason=result.problem or "the harness did not report this check",
                                   error=result.problem)
        if result.completed:
            generate.duration_s = result.completed.duration_s  # the whole run: imports and workers too
        records.extend(r for r in result.records if r is not generate)
        records.append(generate)
        if generate.status is Status.FAIL:
            output = (result.completed.stderr if result.completed else "").strip()
            tail = [OUTPUT_HEADER, *output.splitlines()[-OUTPUT_LINES:]] if output else []
            generate.trace = "\n".join([generate.trace or generate.error or generate.reason, *tail])
            generate.error = explain(generate.error or generate.reason, output, path)
            if size == 1 and other:
                generate.status, generate.reason = Status.SKIP, f"{target.module} does not run on {other}"
        tokens[size] = result.outputs.get("tokens")
        if tokens[size] is None:
            break
    records.append(_compare(target, tokens.get(1), tokens.get(pp), pp, path, device))
    return records


def version_note(machine: Machine, engine: Machine) -> str:
    """'' when the engine runs the vLLM the code is smoked against (the contract tier's), else which
    build it runs and whether that is older or newer."""
    if engine is machine or machine.vllm is None or engine.vllm == machine.vllm:
        return ""
    older = _release(engine.vllm) < _release(machine.vllm)
    return (f"{engine.build or 'vllm'} {engine.vllm}, {'older' if older else 'newer'} than "
            f"the vLLM {machine.vllm} the code is smoked against")


def _release(version: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", (version or "").split("+")[0])[:3])


def engine_env(target: Target, device: str, size: int, cache: str) -> dict[str, str]:
    env = {
        OVERRIDES_ENV: json.dumps(dict(target.overrides)),
        "PYTHONPATH": os.pathsep.join(p for p in (str(SHIM), os.environ.get("PYTHONPATH", "")) if p),
        "VLLM_CACHE_ROOT": cache,
    }
    if device == "cpu":
        cores = os.cpu_count() or 1
        share = max(1, cores // size)
        env["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(
            f"{r * share}-{r * share + share - 1}" if share > 1 else str(min(r, cores - 1)) for r in range(size)
        )
    return env


def _compare(target: Target, single, piped, pp: int, path: str | None, device: str) -> CheckRecord:
    record = CheckRecord(target.arch, TIER, "tokens-equal-pp1", Status.PASS, pp=pp, path=path, device=device)
    if single is None or piped is None:
        failed = "PP=1" if single is None else f"PP={pp}"
        record.status, record.reason = Status.SKIP, f"not reached: the {failed} generate run did not finish"
    elif single != piped:
        record.status = Status.FAIL
        record.error = f"greedy tokens differ: PP=1 {single}, PP={pp} {piped}"
    else:
        record.reason = f"identical greedy tokens: {single}"
    return record
