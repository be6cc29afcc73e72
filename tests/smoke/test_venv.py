"""The managed environment: where it lives, when it is reused, when it is rebuilt; and the vLLM
wheel it is installed from, downloaded once (pip replaced by a fake: no network)."""

from __future__ import annotations

import json
import stat
import sys
import threading
from pathlib import Path

import pytest

from contractfix.smoke import recipe, venv

WHEEL = "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache that already holds the wheel."""
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    venv.wheel_dir().mkdir(parents=True)
    (venv.wheel_dir() / WHEEL).write_text("")
    return tmp_path / "cache"


@pytest.fixture
def pip_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache, and a Python whose `-m pip download ... -d DIR` logs its arguments and writes
    a wheel into DIR (exit 1 and no wheel when FAIL_DOWNLOAD is set). Returns the log."""
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    log = tmp_path / "pip.log"
    python = tmp_path / "python"
    python.write_text(
        '#!/bin/sh\necho "$@" >> ' + str(log) + '\n[ -n "$FAIL_DOWNLOAD" ] && { echo "no network" >&2; exit 1; }\n'
        'while [ "$1" != -d ]; do shift; done\necho wheel > "$2/' + WHEEL + '"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(venv.sys, "executable", str(python))
    return log


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Replace the pip steps by a fake build that creates bin/python; records each build."""
    done: list[Path] = []

    def fake_build(env: venv.ManagedEnv, wheel: Path, echo) -> dict[str, str]:
        assert wheel == venv.wheel_dir() / WHEEL
        env.python.parent.mkdir(parents=True)
        env.python.write_text("")
        done.append(env.root)
        return {"vllm": "0.33.0", "torch": "2.13.0+cpu"}

    monkeypatch.setattr(venv, "_build", fake_build)
    return done


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CONTRACTFIX_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert venv.cache_dir() == tmp_path / "xdg" / "contractfix"
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "own"))
    assert venv.cache_dir() == tmp_path / "own"
    assert venv.managed_env().root == tmp_path / "own" / "envs" / "vllm-0.33.0-cpu"


def test_setup_builds_once_then_reuses(cache: Path, builds: list[Path]) -> None:
    first = venv.setup(echo=lambda _: None)
    assert not first.cached and first.env.ready()
    second = venv.setup(echo=lambda _: None)
    assert second.cached and second.versions == {"vllm": "0.33.0", "torch": "2.13.0+cpu"}
    assert len(builds) == 1
    assert json.loads(first.env.marker.read_text())["fingerprint"] == recipe.fingerprint()


def test_a_half_finished_install_is_removed_and_redone(cache: Path, builds: list[Path]) -> None:
    env = venv.managed_env()
    (env.root / "lib").mkdir(parents=True)
    (env.root / venv.OWNED).write_text("")
    (env.root / "lib" / "partial").write_text("interrupted pip")
    assert not env.ready()
    venv.setup(echo=lambda _: None)
    assert env.ready() and not (env.root / "lib" / "partial").exists()
    assert builds == [env.root]


def test_a_marker_from_another_recipe_means_rebuild(cache: Path, builds: list[Path]) -> None:
    env = venv.setup(echo=lambda _: None).env
    env.marker.write_text(json.dumps({"fingerprint": "an older recipe"}))
    assert not env.ready()
    assert not venv.setup(echo=lambda _: None).cached
    assert len(builds) == 2


def test_concurrent_setups_build_once(cache: Path, builds: list[Path]) -> None:
    results = []
    threads = [threading.Thread(target=lambda: results.append(venv.setup(echo=lambda _: None))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and sorted(r.cached for r in results) == [False, True, True]


def test_a_failing_step_is_a_setup_error_with_the_log(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(venv.sys, "executable", "/nonexistent/python3")
    with pytest.raises(venv.SetupError, match="create virtualenv failed"):
        venv.setup(echo=lambda _: None)
    assert not venv.managed_env().ready()


def test_the_wheel_is_downloaded_once_then_reused(pip_download: Path) -> None:
    first = venv.fetch_wheel(echo=lambda _: None)
    assert first == venv.cache_dir() / "whl" / "0.33.0" / WHEEL and first.read_text() == "wheel\n"
    assert venv.fetch_wheel(echo=lambda _: None) == first
    (call,) = pip_download.read_text().splitlines()
    assert call.startswith("-m pip download") and "--no-deps --only-binary :all: vllm==0.33.0 -d" in call


def test_a_failed_download_is_a_setup_error_and_leaves_no_wheel(pip_download: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_DOWNLOAD", "1")
    with pytest.raises(venv.SetupError, match="download vllm==0.33.0 failed \\(exit 1\\):\nno network"):
        venv.fetch_wheel(echo=lambda _: None)
    assert venv.cached_wheel() is None
    assert sorted(p.name for p in venv.wheel_dir().parent.iterdir()) == ["0.33.0", "0.33.0.lock"]


def test_setup_fetches_the_wheel_even_when_the_environment_is_ready(pip_download: Path, builds: list[Path]) -> None:
    wheel = venv.wheel_dir() / WHEEL
    first = venv.setup(echo=lambda _: None)
    wheel.unlink()
    second = venv.setup(echo=lambda _: None)
    assert second.cached and second.wheel == first.wheel == wheel and wheel.exists()
    assert len(builds) == 1 and len(pip_download.read_text().splitlines()) == 2


def test_the_verify_step_writes_the_bytecode_of_what_it_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even where PYTHONDONTWRITEBYTECODE is set: every later harness process reads it."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = venv.ManagedEnv(tmp_path / "env", "recipe")
    env.python.parent.mkdir(parents=True)
    env.python.symlink_to(sys.executable)
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "warm.py").write_text("VALUE = 1\n")
    verify = f"import json, sys; sys.path.insert(0, {str(tmp_path / 'mods')!r}); import warm; print(json.dumps({{}}))"
    assert venv.run_steps(env, [("nothing", [sys.executable, "-c", "pass"])], verify, echo=lambda _: None) == {}
    assert [p.name.split(".")[0] for p in (tmp_path / "mods" / "__pycache__").iterdir()] == ["warm"]
