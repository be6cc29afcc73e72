"""Fixtures for the smoke tests that need a Python with vLLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix.smoke.launch import find_python, probe
from contractfix.smoke.tiers import Machine


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """This Python if it has vLLM, else the managed environment; the test is skipped without one."""
    python, why = find_python()
    if python is None:
        pytest.skip(f"needs the smoke environment: {why}")
    return python


@pytest.fixture(scope="session")
def vllm_machine(vllm_python: Path) -> Machine:
    """What `vllm_python` offers (versions, GPUs), probed once per session."""
    return probe(vllm_python)
