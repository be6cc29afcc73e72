"""The changed file is the module that runs: the override finder, in-process and through the shim."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contractfix.smoke.harness import smoke_override
from contractfix.smoke.launch import SHIM


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An 'installed' package `fakevllm` with a model module and a helper it imports relatively."""
    site = tmp_path / "site"
    models = site / "fakevllm" / "models"
    models.mkdir(parents=True)
    (site / "fakevllm" / "__init__.py").write_text("")
    (models / "__init__.py").write_text("")
    (models / "helper.py").write_text("KEYS = ['hidden_states', 'residual']\n")
    (models / "llama.py").write_text("from .helper import KEYS\nSOURCE = 'installed'\n")
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in [n for n in sys.modules if n.startswith("fakevllm")]:
        del sys.modules[name]


def _changed(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "checkout" / "llama.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_the_override_is_imported_under_the_installed_name(installed: Path, tmp_path: Path) -> None:
    changed = _changed(tmp_path, "from .helper import KEYS\nSOURCE = 'changed'\n")
    finder = smoke_override.install({"fakevllm.models.llama": str(changed)})
    try:
        module = importlib.import_module("fakevllm.models.llama")
        assert module.SOURCE == "changed" and module.__file__ == str(changed)
        assert module.KEYS == ["hidden_states", "residual"], "relative imports reach the installed package"
    finally:
        smoke_override.uninstall(finder)
    assert "fakevllm.models.llama" not in sys.modules
    assert importlib.import_module("fakevllm.models.llama").SOURCE == "installed"


def test_units_swap_overrides_of_the_same_module(installed: Path, tmp_path: Path) -> None:
    seen = []
    for text in ("SOURCE = 'first'\n", "SOURCE = 'second'\n"):
        path = tmp_path / f"{len(seen)}" / "llama.py"
        path.parent.mkdir()
        path.write_text(text)
        finder = smoke_override.install({"fakevllm.models.llama": str(path)})
        seen.append(importlib.import_module("fakevllm.models.llama").SOURCE)
        smoke_override.uninstall(finder)
    assert seen == ["first", "second"]


def test_the_shim_installs_overrides_in_any_new_process(installed: Path, tmp_path: Path) -> None:
    changed = _changed(tmp_path, "SOURCE = 'changed in a worker'\n")
    shadowed = tmp_path / "shadowed"
    shadowed.mkdir()
    (shadowed / "sitecustomize.py").write_text("import builtins\nbuiltins.SHADOWED_RAN = True\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SHIM), str(installed), str(shadowed)]),
        smoke_override.ENV: json.dumps({"fakevllm.models.llama": str(changed)}),
    }
    code = "import fakevllm.models.llama as m, builtins; print(m.SOURCE, getattr(builtins, 'SHADOWED_RAN', False))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "changed in a worker True"
