"""The pre-commit hooks: the manifest and the documented config validate, each hook's entry works on
the files pre-commit passes (bases and registry still resolved from the whole repo), and
`pre-commit try-repo` installs and runs them offline (pip pointed at the installed packages), from a
virtual environment or not."""

from __future__ import annotations

import os
import shlex
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from identify import identify

from tests.conftest import ROOT

MANIFEST = ROOT / ".pre-commit-hooks.yaml"
HOOKS = {hook["id"]: hook for hook in yaml.safe_load(MANIFEST.read_text("utf-8"))}

# The `.pre-commit-config.yaml` snippet the README documents (rev filled in by the user).
CONFIG = """\
repos:
  - repo: https://github.com/OWNER/contractfix
    rev: v0.1.0
    hooks:
      - id: contractfix
        files: ^vllm/model_executor/models/
      # or, to fix in place (safe fixes only):
      # - id: contractfix-fix
"""

MODELS = "vllm/model_executor/models"
# The rule fixture with a base class in one file and a subclass sending one key more in another.
CROSS_FILE = ROOT / "tests" / "fixtures" / "PP001" / "cross_file"
TREE = {
    "README.md": "not Python\n",
    "vllm/sequence.py": "class IntermediateTensors(dict):\n    pass\n",
    f"{MODELS}/registry.py": '_TEXT_GENERATION_MODELS = {\n    "OwlModel": ("owl", "OwlModel"),\n}\n\n_VLLM_MODELS = {**_TEXT_GENERATION_MODELS}\n',
    # Registered, and only the registry says so: its forward must default intermediate_tensors.
    f"{MODELS}/owl.py": '''\
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory
from vllm.sequence import IntermediateTensors


class OwlModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors: IntermediateTensors | None):
        if not get_pp_group().is_first_rank:
            input_ids = intermediate_tensors["hidden_states"]
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": input_ids})
        return input_ids
''',
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = shutil.copytree(CROSS_FILE, tmp_path / "repo")
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, "utf-8")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "models"], check=True)
    return root


def hook(hook_id: str, repo: Path, files: list[str]) -> subprocess.CompletedProcess:
    """Run a hook the way pre-commit does: its entry and args, then the staged files its `types`
    and `files` select, as paths relative to the repository root, from the root."""
    spec = HOOKS[hook_id]
    chosen = [f for f in files if set(spec.get("types", [])) <= identify.tags_from_path(str(repo / f))]
    program, *entry = shlex.split(spec["entry"])
    assert program == "contractfix"  # this checkout's, whatever is on PATH (try-repo runs the installed one)
    command = [sys.executable, "-m", "contractfix", *entry, *spec.get("args", []), *chosen]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True)


def test_manifest_and_documented_config_validate(tmp_path: Path) -> None:
    pre_commit = [sys.executable, "-m", "pre_commit"]
    subprocess.run([*pre_commit, "validate-manifest", str(MANIFEST)], check=True)
    (tmp_path / ".pre-commit-config.yaml").write_text(CONFIG, "utf-8")
    subprocess.run([*pre_commit, "validate-config", str(tmp_path / ".pre-commit-config.yaml")], check=True)
    documented = {h["id"] for r in yaml.safe_load(CONFIG)["repos"] for h in r["hooks"]}
    assert documented <= set(HOOKS) == {"contractfix", "contractfix-fix"}
    assert all(h["language"] == "python" and h["require_serial"] and h["types"] == ["python"] for h in HOOKS.values())


def test_check_hook_resolves_bases_from_the_whole_repo(repo: Path) -> None:
    result = hook("contractfix", repo, [f"{MODELS}/derived_lm.py", "README.md"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{MODELS}/base_lm.py:" in result.stdout and '"residual"' in result.stdout
    assert "(DerivedLMModel)" in result.stdout, "the class in the file passed, reported where its base sends"
    assert "1 file(s) scanned" in result.stdout


def test_check_hook_finds_the_registry_from_the_whole_repo(repo: Path) -> None:
    result = hook("contractfix", repo, [f"{MODELS}/owl.py"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "PP002" in result.stdout and "OwlModel.forward" in result.stdout


HAWK_BASE = '''\
from torch import nn

from vllm.sequence import IntermediateTensors


class HawkBase(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors: IntermediateTensors | None):
        return input_ids
'''


def test_check_hook_sees_registered_subclasses_of_the_files_passed(repo: Path) -> None:
    """Only the base is staged; the registered class is its subclass in a file not passed, so
    the base's forward is an entry all the same (PP002 reported there)."""
    (repo / MODELS / "hawk_base.py").write_text(HAWK_BASE)
    (repo / MODELS / "hawk.py").write_text("from .hawk_base import HawkBase\n\n\nclass Hawk(\n    HawkBase,\n):\n    pass\n")
    registry = repo / MODELS / "registry.py"
    registry.write_text(registry.read_text().replace("_TEXT_GENERATION_MODELS = {\n", '_TEXT_GENERATION_MODELS = {\n    "Hawk": ("hawk", "Hawk"),\n'))
    result = hook("contractfix", repo, [f"{MODELS}/hawk_base.py"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{MODELS}/hawk_base.py:" in result.stdout and "PP002" in result.stdout and "HawkBase.forward" in result.stdout


def test_check_hook_passes_clean_files(repo: Path) -> None:
    result = hook("contractfix", repo, [f"{MODELS}/base_lm.py", f"{MODELS}/registry.py", "vllm/sequence.py"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_fix_hook_fixes_only_the_files_passed(repo: Path) -> None:
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    result = hook("contractfix-fix", repo, [f"{MODELS}/owl.py"])
    assert result.returncode == 0, result.stdout + result.stderr
    changed = {p.relative_to(repo).as_posix() for p in before if p.read_bytes() != before[p]}
    assert changed == {f"{MODELS}/owl.py"}
    assert "intermediate_tensors: IntermediateTensors | None = None" in (repo / MODELS / "owl.py").read_text("utf-8")
    assert hook("contractfix", repo, [f"{MODELS}/owl.py"]).returncode == 0


def sees_these_packages(folder: Path) -> str:
    """A PYTHONPATH under which any Python also sees this one's site-packages, after its own: the
    hook's virtualenv then has contractfix's dependencies without an index, and runs the contractfix
    pip installed in it. (Its system site-packages would not do: from a virtual environment, that
    is the base interpreter's, without the dependencies.)"""
    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(f"import site\n\nfor d in {dirs!r}:\n    site.addsitedir(d)\n", "utf-8")
    return str(folder)


def test_try_repo_installs_and_runs_the_hooks_offline(repo: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PYTHONPATH": sees_these_packages(tmp_path / "outer-site"),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # pip reads it inverted: no build isolation (setuptools from here)
    }

    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "--files", f"{MODELS}/derived_lm.py", f"{MODELS}/owl.py"]
    result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    start, middle = out.index("- hook id: contractfix\n"), out.index("- hook id: contractfix-fix\n")
    check, fix = out[start:middle], out[middle:]
    assert f"{MODELS}/base_lm.py:" in check and "OwlModel.forward" in check
    assert "files were modified by this hook" in fix
    assert "= None" in (repo / MODELS / "owl.py").read_text("utf-8")
