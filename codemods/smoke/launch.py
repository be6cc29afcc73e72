"""Start the harness under a Python with vLLM: find that Python, probe it, run a plan, read records.

contractfix never imports vLLM or torch; everything that does runs in `harness/`, in a child
process started here (own process group, timeout, killed cleanly on timeout or Ctrl-C).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .cpu_engine import managed_engine_env
from .errors import SetupError
from .records import CheckRecord
from .runner import Completed, run
from .tiers import Machine
from .venv import managed_env

HARNESS = Path(__file__).with_name("harness")
SHIM = HARNESS / "shim"
PROBE_TIMEOUT_S = 120
NO_PYTHON = "no Python with vLLM: run `contractfix smoke --setup` (or pass --python)"


def find_python(explicit: Path | None = None) -> tuple[Path | None, str]:
    """The Python to run the harness with: `explicit`, else this one if it has vLLM, else the
    managed environment when it is ready. Returns (None, why) when there is none."""
    if explicit is not None:
        if not explicit.exists():
            raise SetupError(f"--python {explicit}: no such file")
        return explicit, ""
    if importlib.util.find_spec("vllm") is not None:
        return Path(sys.executable), ""
    env = managed_env()
    if env.ready():
        return env.python, ""
    return None, NO_PYTHON


def find_machine(explicit: Path | None = None, engine: bool = True) -> Machine:
    """`probe` of `find_python`'s choice. This Python can find a `vllm/` folder that is no
    installed vLLM: the current one, from the root of a vLLM checkout, where `python -c` or
    `python -m` put it on the path. Its probe (which runs a script, so the folder is not on its
    path) says so, and the managed environment is taken instead when it is ready. Without an
    explicit Python, a machine that cannot run the engine tier itself gets the managed CPU engine
    environment for it, when that is ready (and for every tier, when it is the only vLLM there);
    `engine=False`: the engine tier will not run, so that environment is probed only as the only vLLM."""
    found, why = find_python(explicit)
    machine = probe(found, why)
    if explicit is None and found == Path(sys.executable) and machine.why_no_python and managed_env().ready():
        machine = probe(managed_env().python)
    if explicit is not None or machine.own_engine_device or not managed_engine_env().ready():
        return machine
    if not engine and machine.python:
        return machine
    cpu_engine = probe(managed_engine_env().python)
    return replace(machine, engine=cpu_engine) if machine.python else cpu_engine


def probe(python: Path | None, why: str = NO_PYTHON) -> Machine:
    """Ask `python` (without importing vLLM) for versions, GPUs and CPU kernels."""
    if python is None:
        return Machine(why_no_python=why)
    done = run([python, HARNESS, "probe"], timeout=PROBE_TIMEOUT_S)
    if done.returncode != 0:
        raise SetupError(f"cannot probe {python} (exit {done.returncode}):\n{done.tail()}")
    info = json.loads(done.stdout.strip().splitlines()[-1])
    if not info.get("vllm"):
        return Machine(why_no_python=f"{python} has no vLLM installed; {NO_PYTHON}")
    return Machine(
        python=python,
        vllm=info["vllm"],
        vllm_dir=Path(info["vllm_dir"]),
        torch=info["torch"],
        cuda_devices=info["cuda_devices"],
        cpu_kernels=info["cpu_kernels"],
        build=info.get("build"),
    )


@dataclass
class HarnessRun:
    """The records a harness run reported, and how the process ended."""

    records: list[CheckRecord] = field(default_factory=list)
    completed: Completed | None = None
    outputs: dict = field(default_factory=dict)

    @property
    def problem(self) -> str:
        """Why the run ended early ('' when it exited normally)."""
        done = self.completed
        if done is None or done.returncode == 0:
            return ""
        if done.timed_out:
            return f"the harness timed out after {done.duration_s:.0f}s and was killed"
        return f"the harness exited with code {done.returncode}:\n{done.tail(12)}"


def run_harness(python: Path, mode: str, plan: dict, *, timeout: float,
                env: Mapping[str, str] | None = None) -> HarnessRun:
    """Run `harness mode PLAN` with `plan` and parse the records (and the harness's other outputs,
    a JSON object such as the engine tier's tokens)."""
    with tempfile.TemporaryDirectory(prefix="contractfix-smoke-") as work:
        results, outputs = Path(work) / "records.jsonl", Path(work) / "outputs.json"
        plan_file = Path(work) / "plan.json"
        plan_file.write_text(json.dumps({**plan, "results": str(results), "outputs": str(outputs)}, default=str))
        done = run([python, HARNESS, mode, plan_file], timeout=timeout, env={**os.environ, **(env or {})})
        if done.returncode == 2:
            raise SetupError(f"the smoke harness could not start under {python}:\n{done.tail()}")
        lines = results.read_text().splitlines() if results.exists() else []
        extra = json.loads(outputs.read_text()) if outputs.exists() else {}
    records = [CheckRecord.from_json(json.loads(line)) for line in lines if line.strip()]
    return HarnessRun(records, done, extra)
