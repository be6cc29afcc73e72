"""Fixtures of the git and sweep tests (a pytest plugin: `pytest_plugins = ["tests.gitfixtures"]`)."""

from __future__ import annotations

from pathlib import Path

import git as gitpython
import pytest

from tests.gitrepo import example_repo


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh HOME: no user or system git configuration, no identity from the environment, and
    contractfix's caches in the temp dir too."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("CONTRACTFIX_CACHE_DIR", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for name in ("AUTHOR", "COMMITTER"):
        for part in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{name}_{part}", raising=False)


@pytest.fixture
def repo(tmp_path: Path, git_env: None) -> gitpython.Repo:
    return example_repo(tmp_path / "repo")


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A real bare repository to push to."""
    gitpython.Repo.init(tmp_path / "remote.git", bare=True)
    return tmp_path / "remote.git"
