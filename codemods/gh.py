"""Open or update a pull request with the GitHub CLI (`gh`)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path


class GhError(Exception):
    """`gh` is missing or failed; the message says what to run by hand."""


def open_pr(cwd: Path, head: str, base: str | None, title: str, body_file: Path) -> str:
    """Create the PR for branch `head`, or edit the one already open; return what gh printed."""
    create = ["gh", "pr", "create", "--head", head, *(["--base", base] if base else []), "--title", title]
    create += ["--body-file", str(body_file)]
    if shutil.which("gh") is None:
        raise GhError(f"gh is not on PATH; install it (https://cli.github.com) or run:\n  {shlex.join(create)}")
    number = _run(cwd, ["gh", "pr", "list", "--head", head, "--state", "open", "--json", "number", "--jq", ".[0].number"])
    if number:
        return _run(cwd, ["gh", "pr", "edit", number, "--title", title, "--body-file", str(body_file)])
    return _run(cwd, create)


def _run(cwd: Path, cmd: list[str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise GhError(f"`{shlex.join(cmd)}` failed (exit {done.returncode}): {detail}")
    return done.stdout.strip()
