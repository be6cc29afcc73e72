"""A finding the release cannot reach is a warning: printed and in every format with its level,
counted apart in the summary, and out of the exit code unless `warnings-as-errors` asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bad_input import violating
from tests.test_pp011 import _tree

RUN = "import sys; from contractfix.cli import run; sys.argv[0] = 'contractfix'; run()"
OPT_IN = "class SupportsEagle3:\n    supports_aux_hidden_states_over_pp = False\n"


def contractfix(command: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`command` over `cwd` with the rules these trees are about (the tree's entry has no factory)."""
    argv = [command, "--no-cache", "--select", "PP001,PP011", *args]
    return subprocess.run([sys.executable, "-c", RUN, *argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GITHUB_STEP_SUMMARY": ""})


@pytest.fixture
def latent(tmp_path: Path) -> Path:
    """A tree whose one finding is PP011's latent relative index."""
    _tree(tmp_path, OPT_IN)
    return tmp_path


def test_a_warning_alone_passes_and_is_still_reported(latent: Path) -> None:
    done = contractfix("check", ".", cwd=latent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "relative.py:11:" in done.stdout and "PP011 warning: `idx` counts" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("0 error(s), 1 warning(s) in ")


def test_warnings_as_errors_from_the_command_line_or_the_config(latent: Path) -> None:
    assert contractfix("check", "--warnings-as-errors", ".", cwd=latent).returncode == 1
    (latent / "pyproject.toml").write_text("[tool.contractfix]\nwarnings-as-errors = true\n")
    assert contractfix("check", ".", cwd=latent).returncode == 1
    assert contractfix("check", "--no-warnings-as-errors", ".", cwd=latent).returncode == 0
    (latent / "pyproject.toml").write_text("[tool.contractfix]\nwarnings-as-errors = 1\n")
    bad = contractfix("check", ".", cwd=latent)
    assert bad.returncode == 2 and "warnings-as-errors" in bad.stderr


def test_every_format_carries_the_level(latent: Path) -> None:
    doc = json.loads(contractfix("check", "--format", "json", ".", cwd=latent).stdout)
    assert [f["level"] for f in doc["findings"]] == ["warning"]
    assert (doc["summary"]["findings"], doc["summary"]["warnings"]) == (1, 1)
    sarif = json.loads(contractfix("check", "--format", "sarif", ".", cwd=latent).stdout)
    assert [r["level"] for r in sarif["runs"][0]["results"]] == ["warning"]
    github = contractfix("check", "--format", "github", ".", cwd=latent)
    assert github.returncode == 0 and github.stdout.startswith("::warning file=")


def test_an_error_beside_a_warning_still_fails(latent: Path) -> None:
    (latent / "vllm" / "model_executor" / "models" / "tiny.py").write_text(violating())
    done = contractfix("check", ".", cwd=latent)
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1].startswith("1 error(s), 1 warning(s) in ")
    fixed = contractfix("fix", ".", cwd=latent)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "1 fixed, 1 remaining" in fixed.stdout
