"""Shared pytest options and fixtures."""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS: list[str] = []
"""Figures tests measure (restored fractions, say), printed after the results: not failures."""


def _import_checkout_as_contractfix() -> None:
    """Tests run this checkout's code under its installed name, `contractfix` (codemods/ installs
    as that package), in this process and in the processes it starts, whatever is pip-installed:
    a directory holding only the link contractfix -> codemods/ goes first on the path."""
    overlay = Path(tempfile.mkdtemp(prefix="contractfix-checkout-"))
    atexit.register(shutil.rmtree, overlay, True)
    (overlay / "contractfix").symlink_to(ROOT / "codemods", target_is_directory=True)
    sys.path.insert(0, str(overlay))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(overlay), os.environ.get("PYTHONPATH")) if p)


_import_checkout_as_contractfix()
pytest_plugins = ["tests.gitfixtures"]


def bench_module(name: str):
    """A module of bench/ (no package: run by hand), loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker of a parallel run (pytest-xdist) hands its measurements to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["measurements"] = list(MEASUREMENTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """The controller of a parallel run keeps what each worker measured (xdist's hook)."""
    MEASUREMENTS.extend(getattr(node, "workeroutput", {}).get("measurements", []))


def pytest_terminal_summary(terminalreporter) -> None:
    if MEASUREMENTS:
        terminalreporter.section("measurements (figures, not failures)")
        for line in MEASUREMENTS:
            terminalreporter.write_line(line)


HEAVY = ("vllm", "vllm_src")
"""Markers of the tests that run real vLLM or read whole vLLM trees: seconds to minutes each."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The heavy tests first (in their order), so that a parallel run (pytest-xdist, `--dist
    loadgroup`: its groups first, then one test at a time to whichever worker is free) never hands
    a minute-long test to a worker while the other one is finishing the rest."""
    items.sort(key=lambda item: not any(item.get_closest_marker(name) for name in HEAVY))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--snapshot-update",
        action="store_true",
        help="rewrite snapshots/ from the current output (review the diff before committing)",
    )


@pytest.fixture
def snapshot_update(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--snapshot-update"))


@pytest.fixture
def in_dir(tmp_path: Path):
    """Run the test with `tmp_path` as the current directory (paths in output are relative)."""
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


@pytest.fixture(autouse=True)
def _files_settle_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests write a file and check it within milliseconds, where a run trusts no stamp younger
    than `inputs.SETTLED_NS` (tests/test_results.py checks that rule with it in force)."""
    from contractfix import inputs

    monkeypatch.setattr(inputs, "SETTLED_NS", 0)


@pytest.fixture(autouse=True, scope="session")
def _private_facts_cache(tmp_path_factory: pytest.TempPathFactory):
    """Tests never share the user's facts cache."""
    old = os.environ.get("CONTRACTFIX_CACHE_DIR")
    os.environ["CONTRACTFIX_CACHE_DIR"] = str(tmp_path_factory.mktemp("facts-cache"))
    yield
    if old is None:
        os.environ.pop("CONTRACTFIX_CACHE_DIR", None)
    else:
        os.environ["CONTRACTFIX_CACHE_DIR"] = old
