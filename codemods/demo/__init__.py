"""`contractfix demo`: the main job (check, then sweep to a branch) on a bundled example tree, in a temp git repo."""

from __future__ import annotations

import shutil
import tempfile
from importlib import resources
from pathlib import Path

from .. import engine, gitops, sweep
from ..config import Options
from ..report import text

EXAMPLE = "example"
DEMO_IDENTITY = gitops.Identity("contractfix demo", "demo@contractfix.invalid")


def copy_example(destination: Path) -> Path:
    """Copy the bundled example tree (our own vLLM-style models and registry) to `destination`."""
    source = resources.files(__package__) / EXAMPLE
    with resources.as_file(source) as folder:
        shutil.copytree(folder, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def run() -> str:
    """Check the example tree, then sweep it in a new git repo: branch, commit, diff, PR body."""
    with tempfile.TemporaryDirectory(prefix="contractfix-demo-") as temp:
        tree = copy_example(Path(temp) / "repo")
        checked = engine.check([tree], Options())
        repo = gitops.init_repo(tree, DEMO_IDENTITY, "Example vLLM-style models")
        result = sweep.sweep(sweep.SweepRequest(repo=tree))
        assert result.commit is not None, "the example has safe fixes: the sweep commits"
        return "\n".join(
            [
                f"== contractfix check {tree}",
                text.render(checked),
                "",
                "== git init; git commit -m 'Example vLLM-style models'; contractfix sweep",
                result.summary(),
                "",
                f"== git log {result.base[:12]}..{result.branch}",
                repo.git.log(f"{result.base}..{result.commit}"),
                "",
                f"== git diff {result.base[:12]} {result.branch}",
                gitops.diff(repo, result.base, result.commit),
                "",
                "== PR body",
                result.pr_text.rstrip("\n"),
            ]
        )
