"""Open or update a pull request with the GitHub CLI (`gh`), safely from a fork.

The default branch name is the same for everyone, so a PR is looked up by branch *and* by the owner
of the repository it comes from: another fork's PR with the same branch name is never edited.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

GITHUB_URL = re.compile(r"(?:https?://|ssh://)?(?:[^@/]+@)?github\.com[:/]([^/\s]+)/([^/\s]+?)(?:\.git)?/?$")


class GhError(Exception):
    """`gh` is missing or failed; the message says what to run by hand."""


def repository(url: str) -> str | None:
    """"OWNER/NAME" of a GitHub remote URL (https, ssh or scp-like), else None."""
    match = GITHUB_URL.match(url.strip())
    return f"{match.group(1)}/{match.group(2)}" if match else None


@dataclass(frozen=True)
class PullRequest:
    """A PR from `branch` (pushed to `head_repo`, "OWNER/NAME" when known) into `base` of `repo`
    ("OWNER/NAME"; None: the repository gh picks for the current directory)."""

    branch: str
    base: str | None
    title: str
    body_file: Path
    repo: str | None = None
    head_repo: str | None = None
    draft: bool = False
    labels: tuple[str, ...] = ()

    @property
    def head_owner(self) -> str | None:
        return self.head_repo.split("/")[0] if self.head_repo else None

    @property
    def head(self) -> str:
        """`owner:branch` when the branch is in another repository (a fork), else the branch."""
        cross = self.head_repo and self.repo and self.head_repo.lower() != self.repo.lower()
        return f"{self.head_owner}:{self.branch}" if cross else self.branch

    def _repo_args(self) -> list[str]:
        return ["--repo", self.repo] if self.repo else []

    def create_command(self) -> list[str]:
        cmd = ["gh", "pr", "create", *self._repo_args(), "--head", self.head]
        cmd += [*(["--base", self.base] if self.base else []), "--title", self.title, "--body-file", str(self.body_file)]
        cmd += ["--draft"] if self.draft else []
        return cmd + [arg for label in self.labels for arg in ("--label", label)]

    def edit_command(self, number: str) -> list[str]:
        cmd = ["gh", "pr", "edit", number, *self._repo_args(), "--title", self.title, "--body-file", str(self.body_file)]
        return cmd + [arg for label in self.labels for arg in ("--add-label", label)]

    def list_command(self) -> list[str]:
        fields = "number,headRepositoryOwner,isCrossRepository"
        return ["gh", "pr", "list", *self._repo_args(), "--head", self.branch, "--state", "open", "--json", fields]


def open_pr(cwd: Path, pr: PullRequest) -> str:
    """Create the PR, or edit the open one from the same branch of the same owner; return what gh printed."""
    if shutil.which("gh") is None:
        raise GhError(f"gh is not on PATH; install it (https://cli.github.com) or run:\n  {shlex.join(pr.create_command())}")
    number = _open_number(pr, _run(cwd, pr.list_command()))
    return _run(cwd, pr.edit_command(number) if number else pr.create_command())


def _open_number(pr: PullRequest, listed: str) -> str | None:
    """The number of the listed PR that comes from our branch: same owner when it is known, else
    not from a fork."""
    try:
        found = json.loads(listed or "[]")
    except json.JSONDecodeError:
        found = None
    if not isinstance(found, list):
        raise GhError(f"`gh pr list` did not print a JSON list: {listed[:200]!r}")
    for entry in found:
        login = (entry.get("headRepositoryOwner") or {}).get("login", "")
        ours = login.lower() == pr.head_owner.lower() if pr.head_owner else not entry.get("isCrossRepository")
        if ours:
            return str(entry["number"])
    return None


def _run(cwd: Path, cmd: list[str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise GhError(f"`{shlex.join(cmd)}` failed (exit {done.returncode}): {detail}")
    return done.stdout.strip()
