"""Every command of the README runs as written, in order, on a git checkout of vLLM 0.33.0's
sources (from the wheel the test set-up keeps), with a remote named `origin` to push to.

The README holds exactly two set-up commands (install and demo; install and every test), which
`.ci/run` runs itself; every other command in a `bash` block is a `contractfix` command, and each
must end with exit 0 or 1 (1: findings left), without a traceback or an `error:` line.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import git as gitpython
import pytest

from contractfix.smoke.recipe import VLLM
from contractfix.smoke.venv import cache_dir
from tests.conftest import ROOT

pytestmark = [pytest.mark.vllm, pytest.mark.vllm_src]
RUN = "import sys; from contractfix.cli import run; sys.argv[0] = 'contractfix'; run()"
CACHE = cache_dir()  # before a fixture moves HOME: the smoke commands use the set-up's environment
SET_UP = "python3 -m pip install"
VERSION = VLLM.partition("==")[2]


def readme_commands() -> list[str]:
    """The command lines of the README's `bash` blocks, comments and blank lines dropped."""
    blocks = re.findall(r"^```bash\n(.*?)^```", (ROOT / "README.md").read_text("utf-8"), re.M | re.S)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_readme_has_exactly_the_two_set_up_commands() -> None:
    set_up = [line for line in readme_commands() if line.startswith(SET_UP)]
    assert set_up == [
        "python3 -m pip install -e . && contractfix demo",
        "python3 -m pip install -e '.[test]' && contractfix smoke --setup && python3 -m pytest",
    ]
    assert set_up[1].split(" && ", 1)[1] in (ROOT / ".ci" / "run").read_text(), ".ci/run runs the README's test command"
    others = [line for line in readme_commands() if not line.startswith(SET_UP)]
    assert others and all(line.startswith("contractfix ") for line in others)


@pytest.fixture
def checkout(tmp_path: Path, git_env: None) -> Path:
    """vLLM 0.33.0's Python sources, committed, with a bare `origin`."""
    wheel = next(iter(sorted((CACHE / "whl").glob(f"{VERSION}/vllm-*.whl"))), None)
    if wheel is None:
        pytest.skip("no vLLM wheel: `contractfix smoke --setup` fetches it")
    root = tmp_path / "vllm-checkout"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(root, [n for n in archive.namelist() if n.startswith("vllm/") and n.endswith(".py")])
    repo = gitpython.Repo.init(root, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "README Reader")
        config.set_value("user", "email", "reader@example.invalid")
    repo.git.add(".")
    repo.git.commit("-q", "-m", "vLLM 0.33.0")
    gitpython.Repo.init(tmp_path / "origin.git", bare=True)
    repo.create_remote("origin", str(tmp_path / "origin.git"))
    return root


def test_every_readme_command_runs_as_written(checkout: Path, tmp_path: Path) -> None:
    empty_cache = tmp_path / "no-smoke-cache"
    ran = []
    for line in readme_commands():
        if line.startswith(SET_UP):
            continue
        argv = shlex.split(line, comments=True)
        # `smoke --remove` would delete the environment the rest of the suite uses: it runs on an
        # empty cache, where it removes nothing.
        env = {**os.environ, "CONTRACTFIX_CACHE": str(empty_cache if "--remove" in argv else CACHE)}
        done = subprocess.run([sys.executable, "-c", RUN, *argv[1:]], cwd=checkout, env=env, capture_output=True,
                              text=True, timeout=600)
        output = done.stdout + done.stderr
        assert done.returncode in (0, 1), f"{line}\n{output}"
        assert "Traceback" not in output and not re.search(r"^error: ", output, re.M), f"{line}\n{output}"
        ran.append(argv[1])
    assert {"check", "fix", "explain", "sweep", "smoke"} <= set(ran)
    body = (checkout / "pr.md").read_text()
    assert re.search(r"^This PR fixes \d+ contract violations \(\d+ pipeline-parallel \(PP\), \d+ prefix \(PF\)", body, re.M)
    assert "### Pipeline parallelism (PP)" in body and "### Prefix (PF)" in body, "fixes grouped by family"
    assert (checkout / "smoke.json").is_file()
    assert (checkout / "contractfix.sarif").read_text().startswith("{")
