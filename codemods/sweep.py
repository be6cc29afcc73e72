"""`contractfix sweep`: fix a commit in a throwaway worktree, commit on a branch, push, describe the PR.

The user's checkout (branch, index, working tree, untracked files) is never touched: the fixes are
made in a temporary worktree at the base commit, and only the branch ref (and the remote) move.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import git as gitpython

from . import commit_message, config, engine, gh, git, prbody
from .findings import FileError, Finding, Report
from .report import json as json_report
from .rules import ALL

DEFAULT_BRANCH = "contractfix/pp-contracts"
COMMIT_PER = ("run", "rule")


@dataclass(frozen=True)
class SweepRequest:
    """What to sweep and where the result goes. `overrides` are `config.Options` values from the
    command line (select, ignore, exclude, pp002_scope, unsafe_fixes), applied over the base
    commit's `[tool.contractfix]`."""

    repo: Path = Path(".")
    base: str = "HEAD"
    branch: str = DEFAULT_BRANCH
    commit_per: str = "run"
    author: str | None = None
    push: str | None = None
    pr_body: Path | None = None
    open_pr: bool = False
    force: bool = False
    overrides: dict = field(default_factory=dict)


@dataclass
class SweepResult:
    """What a sweep did. Paths are relative to the repo root; `status` is one of
    "nothing to do", "created", "updated", "unchanged"."""

    branch: str
    base: str
    status: str = "nothing to do"
    commit: str | None = None
    commits: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    unfixed: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    pushed: bool = False
    pr_body: Path | None = None
    pr_text: str = ""
    pr: str = ""
    diffstat: str = ""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "branch": self.branch,
            "base": self.base,
            "status": self.status,
            "commit": self.commit,
            "commits": self.commits,
            "files": self.files,
            "fixed": [json_report.finding(f) for f in self.fixed],
            "unfixed": [json_report.finding(f) for f in self.unfixed],
            "errors": [{"path": e.path.as_posix(), "message": e.message} for e in self.errors],
            "pushed": self.pushed,
            "pr_body": str(self.pr_body) if self.pr_body else None,
            "pr": self.pr or None,
            "notes": self.notes,
        }

    def summary(self) -> str:
        lines = [f"note: {n}" for n in self.notes]
        lines += [f"{e.path.as_posix()}: error: {e.message}" for e in self.errors]
        if self.commit is None:
            lines.append(f"nothing to do on {self.base[:12]}: no fixable finding")
        else:
            lines.append(f"branch {self.branch} {self.status} at {self.commit[:12]} (base {self.base[:12]})")
            lines.append(self.diffstat)
        lines.append(f"{len(self.fixed)} fixed, {len(self.unfixed)} left for review, {len(self.errors)} error(s)")
        if self.pushed:
            lines.append(f"pushed {self.branch}")
        if self.pr_body:
            lines.append(f"PR body written to {self.pr_body}")
        if self.pr:
            lines.append(self.pr)
        return "\n".join(lines)


@dataclass
class _Built:
    """The commits made in the worktree and the findings behind them."""

    commits: list[str] = field(default_factory=list)
    report: Report = field(default_factory=Report)
    unfixed: list[Finding] = field(default_factory=list)


def sweep(request: SweepRequest) -> SweepResult:
    """Run the whole job; raises `git.GitError` / `gh.GhError` for what the user must fix (exit 2)."""
    if request.commit_per not in COMMIT_PER:
        raise git.GitError(f"--commit-per must be one of {', '.join(COMMIT_PER)}")
    if request.open_pr and not request.push:
        raise git.GitError("--open-pr needs --push REMOTE: the PR's branch must be on GitHub first")
    repo = git.open_repo(request.repo)
    if request.push:
        request = replace(request, push=git.remote_location(repo, request.push))
    root = Path(repo.working_tree_dir)
    base = git.resolve(repo, request.base)
    git.check_branch_name(repo, request.branch)
    result = SweepResult(request.branch, base)
    result.notes += [f"removed the stale worktree {p}" for p in git.remove_stale_worktrees(repo)]
    if git.is_dirty(repo):
        result.notes.append(f"{root} has uncommitted changes; the sweep sees commit {base[:12]} only")
    local = git.branch_tip(repo, request.branch)
    _check_owner(repo, base, local, request, f"branch {request.branch!r}")
    who = git.identity(repo, request.author)
    with git.worktree(repo, base) as tree:
        top = Path(tree.working_tree_dir)
        remote = _remote_tip(tree, base, request)
        options = config.load(top, **request.overrides)
        built = _build(tree, top, base, options, request.commit_per, who)
        result.fixed = [_relative(f, top) for f in built.report.fixed]
        result.unfixed = [_relative(f, top) for f in built.unfixed]
        result.errors = [FileError(_path(e.path, top), e.message) for e in built.report.errors]
        if not built.commits:
            if local:
                result.notes.append(f"branch {request.branch!r} left as it was")
            return result
        result.files = sorted({_path(c.path, top).as_posix() for c in built.report.changes})
        new = git.commits_between(tree, base, built.commits[-1])
        kept = next((tip for tip in (local, remote) if tip and _same(tree, base, tip, new)), None)
        result.commit = kept or built.commits[-1]
        result.commits = [c.sha for c in git.commits_between(tree, base, result.commit)]
        result.status = "unchanged" if kept else "updated" if local or remote else "created"
        if result.commit != local:
            git.set_branch(repo, request.branch, result.commit, local)
        result.diffstat = git.diff(tree, base, result.commit, "--stat")
        result.pr_text = prbody.render(result.fixed, result.unfixed, base, fix_args(request.overrides))
        result.pr_body = _write_body(repo, request, result.pr_text)
        if request.push:
            if remote != result.commit:
                git.push(tree, request.push, request.branch, remote)
            result.pushed = True
    if request.open_pr:
        title = commit_message.title(result.fixed)
        result.pr = gh.open_pr(root, request.branch, git.branch_of(repo, request.base), title, result.pr_body)
    return result


def _check_owner(repo: gitpython.Repo, base: str, tip: str | None, request: SweepRequest, where: str) -> None:
    """Refuse to replace commits someone else made on the branch, unless --force."""
    if tip is None or request.force:
        return
    foreign = [c for c in git.commits_between(repo, base, tip) if not commit_message.is_ours(c.message)]
    if foreign:
        shown = "\n".join(f"  {c.sha[:12]} {c.author}: {c.summary}" for c in foreign[:10])
        more = f"\n  ... and {len(foreign) - 10} more" if len(foreign) > 10 else ""
        raise git.GitError(
            f"{where} has commits not made by contractfix; refusing to replace them "
            f"(--force to replace anyway, or --branch NAME to use another branch):\n{shown}{more}"
        )


def _remote_tip(tree: gitpython.Repo, base: str, request: SweepRequest) -> str | None:
    """The remote branch's commit (fetched, and checked like the local branch), if pushing."""
    if not request.push:
        return None
    tip = git.remote_tip(tree, request.push, request.branch)
    if tip:
        git.fetch(tree, request.push, request.branch)
        _check_owner(tree, base, tip, request, f"{request.push} branch {request.branch!r}")
    return tip


def _build(tree: gitpython.Repo, top: Path, base: str, options: config.Options, per: str, who: git.Identity) -> _Built:
    """Fix the worktree and commit: once for the run, or once per rule (in code order)."""
    built = _Built()
    if per == "run":
        built.report = engine.fix([top], options)
        built.unfixed = built.report.remaining
        _commit(tree, built, built.report, base, who)
        return built
    for code in (c for c, rule in ALL.items() if rule.fix and options.wants(c)):
        report = engine.fix([top], replace(options, select=(code,)))
        built.report.fixed += report.fixed
        built.report.changes += report.changes
        built.report.errors += report.errors
        _commit(tree, built, report, built.commits[-1] if built.commits else base, who)
    built.unfixed = engine.check([top], options).findings
    return built


def _commit(tree: gitpython.Repo, built: _Built, report: Report, parent: str, who: git.Identity) -> None:
    if not report.changes:
        return
    top = Path(tree.working_tree_dir)
    fixed = [_relative(f, top) for f in report.fixed]
    left = [_relative(f, top) for f in report.remaining]
    message = commit_message.message(fixed, left)
    built.commits.append(git.commit(tree, [c.path for c in report.changes], message, parent, who))


def _same(repo: gitpython.Repo, base: str, tip: str, new: list[git.CommitInfo]) -> bool:
    """Whether `tip` already holds exactly the commits just built (same trees, same messages, same base)."""
    old = git.commits_between(repo, base, tip)
    shape = lambda commits: [(c.tree, c.message.strip()) for c in commits]  # noqa: E731
    return bool(old) and old[0].parent == base and shape(old) == shape(new)


def _write_body(repo: gitpython.Repo, request: SweepRequest, text: str) -> Path | None:
    """Write the PR body to --pr-body; with --open-pr alone, to a file in the git dir for gh."""
    path = request.pr_body
    if path is None and request.open_pr:
        path = Path(repo.git_dir) / "contractfix" / "PR_BODY.md"
        path.parent.mkdir(exist_ok=True)
    if path is not None:
        path.write_text(text, encoding="utf-8")
    return path


def fix_args(overrides: dict) -> list[str]:
    """The `contractfix fix` options that reproduce a sweep's fixes."""
    args: list[str] = []
    if overrides.get("unsafe_fixes"):
        args.append("--unsafe-fixes")
    for flag, key in (("--select", "select"), ("--ignore", "ignore")):
        if overrides.get(key):
            args += [flag, ",".join(overrides[key])]
    for pattern in overrides.get("exclude") or ():
        args += ["--exclude", pattern]
    if overrides.get("pp002_scope"):
        args += ["--pp002-scope", overrides["pp002_scope"]]
    return args


def _path(path: Path, top: Path) -> Path:
    return Path(os.path.relpath(Path(path).resolve(), top.resolve()))


def _relative(finding: Finding, top: Path) -> Finding:
    evidence = tuple(replace(e, path=_path(e.path, top)) for e in finding.evidence)
    return replace(finding, path=_path(finding.path, top), evidence=evidence)
