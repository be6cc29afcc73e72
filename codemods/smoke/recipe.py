"""What goes into the managed smoke environment: pinned vLLM, a CPU torch, and vLLM's CPU-side deps."""

from __future__ import annotations

import hashlib
import json
import sys

VLLM = "vllm==0.33.0"
TORCH = "torch==2.13.0"
"""On these machines pip resolves this pin to a local CPU build; elsewhere to PyPI's default wheel."""

REQUIREMENTS = (
    "regex",
    "cachetools",
    "psutil",
    "sentencepiece",
    "numpy",
    "requests>=2.33.0",
    "certifi>=2026.10.19",
    "tqdm",
    "transformers>=5.16.1,<5.21.0",
    "huggingface_hub>=1.31.0",
    "tokenizers>=0.23.2",
    "safetensors>=0.6.2",
    "protobuf>=5.29.6,!=6.30.*,!=6.31.*,!=6.32.*,!=6.33.0.*,!=6.33.1.*,!=6.33.2.*,!=6.33.3.*,!=6.33.4.*",
    "pydantic>=2.12.0",
    "typing_extensions>=4.10",
    "filelock>=3.20.3",
    "jsonschema>=4.23.0",
    "msgspec",
    "pyyaml",
    "einops",
    "cloudpickle",
    "blake3",
    "cbor2",
    "pybase64",
    "pyzmq>=25.0.0",
    "py-cpuinfo",
    "aiohttp>=3.14.4",
    "oss-harmony>=0.0.11",
    "openai>=2.25.0",
    "pillow>=13.0.0",
    "uvloop",
    "prometheus_client>=0.18.0",
    "apache-tvm-ffi>=0.1.11",
    "fastapi[standard]>=0.133.0,<0.137.0",
    "partial-json-parser",
    "llguidance>=1.7.0,<1.8.0",
    "compressed-tensors==0.17.0",
)
"""The subset of vLLM's dependencies its model code imports (found by trial in the pp-smoke spike).

vLLM itself is installed with `--no-deps`: its metadata pins a CUDA torch and ~3.5 GB of CUDA
libraries that a CPU smoke never loads.
"""
NO_DEPS = ("xgrammar==0.2.8",)
"""Installed with vLLM, without their dependencies: xgrammar's would bring triton (1 GB of GPU
kernels, which xgrammar imports guarded); its others are in `REQUIREMENTS` (apache-tvm-ffi)."""


def fingerprint() -> str:
    """Changes whenever the recipe or the base interpreter changes, so a stale env is rebuilt."""
    payload = {
        "vllm": VLLM,
        "torch": TORCH,
        "requirements": REQUIREMENTS,
        "no_deps": NO_DEPS,
        "python": sys.version_info[:2],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
