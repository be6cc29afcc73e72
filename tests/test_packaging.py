"""What `pip install` puts in site-packages: one package, `contractfix`, built from codemods/ and
cli.py (sdist, then a wheel from the sdist, as `python -m build` does) and installed into a fresh
virtual environment offline. Its dependencies come from the Python running the tests."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from contractfix import __version__
from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("packaging")  # the wheel is built and installed once, on one worker

MODEL = '''\
from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP
from vllm.sequence import IntermediateTensors


class OwlModel(nn.Module, SupportsPP):
    def forward(self, input_ids, positions, intermediate_tensors: IntermediateTensors | None):
        return input_ids
'''


def clean_env() -> dict[str, str]:
    """The environment without the test session's path overlay (see conftest)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def run(argv: list[str | Path], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=300)


SOURCES = ("pyproject.toml", "README.md", "cli.py", "codemods/")


def source_files() -> list[str]:
    """The files of a clone of this checkout (tracked, and new ones not ignored) the build reads."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
                             *SOURCES], check=True, capture_output=True, text=True).stdout
    return sorted({f for f in listed.split("\0") if f and (ROOT / f).exists()})


def build_wheel(tmp_path: Path) -> Path:
    """An sdist of a copy of the checkout, then a wheel from the unpacked sdist."""
    clone = tmp_path / "clone"
    for rel in source_files():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_symlink():
            (clone / rel).symlink_to(os.readlink(ROOT / rel))
        else:
            (clone / rel).write_bytes((ROOT / rel).read_bytes())
    dist = tmp_path / "dist"
    backend = "import sys; from setuptools import build_meta as b; print(b.build_{}(sys.argv[1]))"
    sdist = run([sys.executable, "-c", backend.format("sdist"), dist], clone)
    assert sdist.returncode == 0, sdist.stderr
    with tarfile.open(dist / sdist.stdout.strip().splitlines()[-1]) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    unpacked = next((tmp_path / "unpacked").iterdir())
    wheel = run([sys.executable, "-c", backend.format("wheel"), dist], unpacked)
    assert wheel.returncode == 0, wheel.stderr
    return dist / wheel.stdout.strip().splitlines()[-1]


def site_packages(env: Path) -> Path:
    return Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, set[str]]:
    """(wheel, venv, what the install added to the venv's site-packages)."""
    tmp_path = tmp_path_factory.mktemp("packaging")
    wheel = build_wheel(tmp_path)
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    lib = site_packages(env)
    # The test Python's packages (the dependencies, and pip) are visible after the venv's own.
    outer = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    (lib / "_test_python.pth").write_text("".join(f"{p}\n" for p in outer), "utf-8")
    before = {p.name for p in lib.iterdir()}
    pip = run([env / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
               "--disable-pip-version-check", wheel], tmp_path)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return wheel, env, {p.name for p in lib.iterdir()} - before


def test_the_wheel_ships_every_source_file_under_contractfix(installed: tuple[Path, Path, set[str]]) -> None:
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {"contractfix/" + f.removeprefix("codemods/") for f in source_files() if f.startswith("codemods/")}
    assert expected <= names
    assert {n.split("/")[0] for n in names} == {"contractfix", f"contractfix-{__version__}.dist-info"}
    assert zipfile.ZipFile(wheel).read("contractfix/cli.py") == (ROOT / "cli.py").read_bytes()


def test_site_packages_gets_only_contractfix(installed: tuple[Path, Path, set[str]]) -> None:
    _, env, added = installed
    assert added == {"contractfix", f"contractfix-{__version__}.dist-info"}
    assert (env / "bin" / "contractfix").exists()


def test_python_m_contractfix_runs_the_installed_package(installed: tuple[Path, Path, set[str]], tmp_path: Path) -> None:
    _, env, _ = installed
    where = run([env / "bin" / "python", "-c", "import contractfix.cli; print(contractfix.cli.__file__)"], tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(site_packages(env)), where.stdout + where.stderr
    rules = run([env / "bin" / "python", "-m", "contractfix", "rules"], tmp_path)
    assert rules.returncode == 0, rules.stderr
    assert "PP001" in rules.stdout and "PP100" in rules.stdout


def test_the_console_script_checks_a_tree(installed: tuple[Path, Path, set[str]], tmp_path: Path) -> None:
    _, env, _ = installed
    (tmp_path / "owl.py").write_text(MODEL, "utf-8")
    check = run([env / "bin" / "contractfix", "check", "--no-cache", "."], tmp_path)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "owl.py:" in check.stdout and "PP002" in check.stdout
