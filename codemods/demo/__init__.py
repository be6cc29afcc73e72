"""`contractfix demo`: the main job on a bundled example tree, in a temp dir."""

from __future__ import annotations

import shutil
import tempfile
from importlib import resources
from pathlib import Path

from .. import engine
from ..config import Options
from ..report import text

EXAMPLE = "example"


def copy_example(destination: Path) -> Path:
    """Copy the bundled example tree (our own vLLM-style models and registry) to `destination`."""
    source = resources.files(__package__) / EXAMPLE
    with resources.as_file(source) as folder:
        shutil.copytree(folder, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def run() -> str:
    with tempfile.TemporaryDirectory(prefix="contractfix-demo-") as temp:
        tree = copy_example(Path(temp) / "repo")
        checked = engine.check([tree], Options())
        fixed = engine.fix([tree], Options())
        after = engine.check([tree], Options())
        return "\n".join(
            [
                f"== contractfix check {tree}",
                text.render(checked),
                "",
                "== contractfix fix",
                text.unified_diff(fixed.changes).rstrip("\n"),
                text.render_fix(fixed),
                "",
                "== contractfix check (after fix)",
                text.render(after),
            ]
        )
