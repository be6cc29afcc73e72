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
from .smoke import SmokeReport, Tier, run_smoke

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
    smoke: str | None = None
    overrides: dict = field(default_factory=dict)


@dataclass
class SweepResult:
    """What a sweep did. Paths are relative to the repo root; `status` is one of
    "nothing to do", "created", "updated", "unchanged". `pushed`: the remote's branch is at
    `commit` (`push_updated`: this run moved it there)."""

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
    push_updated: bool = False
    pr_body: Path | None = None
    pr_text: str = ""
    pr: str = ""
    diffstat: str = ""
    smoke: SmokeReport | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 when some file could not be analysed or fixed, or the smoke run failed; else 0."""
        return 1 if self.errors or self.smoke and not self.smoke.ok else 0

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
            "push_updated": self.push_updated,
            "pr_body": str(self.pr_body) if self.pr_body else None,
            "pr": self.pr or None,
            "smoke": self.smoke.to_json() if self.smoke else None,
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
        if self.smoke:
            lines.append(self.smoke.summary())
        lines.append(f"{len(self.fixed)} fixed, {len(self.unfixed)} left for review, {len(self.errors)} error(s)")
        if self.pushed:
            lines.append(f"pushed {self.branch}" if self.push_updated else f"{self.branch} already up to date on the remote")
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
    """Run the whole job. Raises ValueError (a bad request), `git.GitError`, `gh.GhError` and the
    smoke's `SetupError` / `UsageError`: each a message for the user, to exit 2 with."""
    if request.commit_per not in COMMIT_PER:
        raise ValueError(f"--commit-per must be one of {', '.join(COMMIT_PER)}")
    if request.open_pr and not request.push:
        raise ValueError("--open-pr needs --push REMOTE: the PR's branch must be on GitHub first")
    if request.smoke:
        Tier.parse(request.smoke)
    repo = git.open_repo(request.repo)
    if request.push:
        request = replace(request, push=git.remote_location(repo, request.push))
    base = git.resolve(repo, request.base)
    git.check_branch_name(repo, request.branch)
    result = SweepResult(request.branch, base)
    result.notes += [f"removed the stale worktree {p}" for p in git.remove_stale_worktrees(repo)]
    if git.is_dirty(repo):
        result.notes.append(f"{repo.working_tree_dir} has uncommitted or untracked files; the sweep sees commit {base[:12]} only")
    local = git.branch_tip(repo, request.branch)
    _check_owner(repo, base, local, request, f"branch {request.branch!r}")
    who = git.identity(repo, request.author)
    with git.worktree(repo, base) as tree:
        top = Path(tree.working_tree_dir)
        remote = _remote_tip(tree, base, request)
        built = _build(tree, top, base, config.load(top, **request.overrides), request.commit_per, who)
        _record(result, built, top)
        if not built.commits:
            if local:
                result.notes.append(f"branch {request.branch!r} left as it was")
            return result
        new = git.commits_between(tree, base, built.commits[-1])
        kept = next((tip for tip in (local, remote) if tip and _same(tree, base, tip, new)), None)
        result.commit = kept or built.commits[-1]
        result.commits = [c.sha for c in git.commits_between(tree, base, result.commit)]
        result.status = "unchanged" if kept else "updated" if local or remote else "created"
        if request.smoke:
            result.smoke = run_smoke([top / f for f in result.files], tier=request.smoke, base=base)
        if result.commit != local:
            git.set_branch(repo, request.branch, result.commit, local)
        _describe(repo, tree, request, result)
        if result.smoke and not result.smoke.ok:
            result.notes.append("the smoke run failed: not pushed, no PR opened")
            return result
        if request.push:
            result.push_updated = remote != result.commit
            if result.push_updated:
                git.push(tree, request.push, request.branch, remote)
            result.pushed = True
    if request.open_pr:
        title = commit_message.title(result.fixed)
        target = git.branch_of(repo, request.base)
        result.pr = gh.open_pr(Path(repo.working_tree_dir), request.branch, target, title, result.pr_body)
    return result


def _record(result: SweepResult, built: _Built, top: Path) -> None:
    """Copy what the build found into the result, with paths relative to the repo root."""
    result.fixed = [_relative(f, top) for f in built.report.fixed]
    result.unfixed = [_relative(f, top) for f in built.unfixed]
    result.errors = [FileError(_path(e.path, top), e.message) for e in built.report.errors]
    result.files = sorted({_path(c.path, top).as_posix() for c in built.report.changes})


def _describe(repo: gitpython.Repo, tree: gitpython.Repo, request: SweepRequest, result: SweepResult) -> None:
    """The diff stat and the PR body (written to --pr-body, or to the git dir for --open-pr)."""
    result.diffstat = git.diff(tree, result.base, result.commit, "--stat")
    smoke = prbody.Smoke(result.smoke.ok, result.smoke.summary()) if result.smoke else None
    result.pr_text = prbody.render(result.fixed, result.unfixed, result.base, fix_args(request.overrides), smoke)
    result.pr_body = request.pr_body
    if result.pr_body is None and request.open_pr:
        result.pr_body = Path(repo.git_dir) / "contractfix" / "PR_BODY.md"
        result.pr_body.parent.mkdir(exist_ok=True)
    if result.pr_body is not None:
        result.pr_body.write_text(result.pr_text, encoding="utf-8")


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
    """Fix the worktree and commit: once for the run, or once per rule (in code order) after a dry
    run that says which rules have fixes and what is left."""
    built = _Built()
    if per == "run":
        built.report = engine.fix([top], options)
        built.unfixed = built.report.remaining
        _commit(tree, built, built.report, base, who)
        return built
    planned = engine.fix([top], options, write=False)
    built.unfixed = planned.remaining
    built.report.errors = planned.errors
    for code in sorted({f.rule for f in planned.fixed}):
        report = engine.fix([top], replace(options, select=(code,)))
        built.report.fixed += report.fixed
        built.report.changes += report.changes
        _commit(tree, built, report, built.commits[-1] if built.commits else base, who)
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
    return bool(old) and old[0].parent == base and _shape(old) == _shape(new)


def _shape(commits: list[git.CommitInfo]) -> list[tuple[str, str]]:
    return [(c.tree, c.message.strip()) for c in commits]


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
