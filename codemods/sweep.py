"""`contractfix sweep`: fix a commit in a throwaway worktree, commit on a branch, push, describe the PR.

The user's checkout (branch, index, working tree, untracked files) is never touched: the fixes are
made in a temporary worktree at the base commit, and only the branch ref (and the remote) move.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

import git

from . import commit_message, config, engine, gh, gitops, prbody, sweeptree
from .findings import FileError, Finding, Report
from .report import json_format as json_report
from .smoke import SmokeReport, Tier, run_smoke

DEFAULT_BRANCH = "contractfix/pp-contracts"
COMMIT_PER = ("run", "rule")
DESCRIPTORS = 64
"""Open files a sweep asks for: git, its worktree and the worker pool hold pipes all along."""


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
    dry_run: bool = False
    pr_repo: str | None = None
    draft: bool = False
    labels: tuple[str, ...] = ()


@dataclass
class SweepResult:
    """What a sweep did. Paths are relative to the repo root; `status` is one of
    "nothing to do", "created", "updated", "unchanged", "dry run" (`plan` says what a real run would
    do), "error" (`error` says why; the other fields hold what was done before it). `pushed`: the
    remote's branch is at `commit` (`push_updated`: this run moved it there)."""

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
    plan: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def exit_code(self) -> int:
        """2 on a failure, 1 when some file could not be analysed or fixed, or the smoke run failed; else 0."""
        if self.error is not None:
            return 2
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
            "plan": self.plan,
            "error": self.error,
        }

    def summary(self) -> str:
        lines = [f"note: {n}" for n in self.notes]
        lines += [f"{e.path.as_posix()}: error: {e.message}" for e in self.errors]
        if self.plan:
            files = f"{len(self.files)} file(s): {', '.join(self.files)}" if self.files else "no file"
            lines.append(f"dry run, nothing changed; would fix {files}")
            lines += [f"  {f.path.as_posix()}:{f.line}: {f.rule} {f.name} ({f.cls})" for f in self.fixed]
            lines += [f"  {step}" for step in self.plan]
            lines.append(f"{len(self.fixed)} to fix, {len(self.unfixed)} left for review, {len(self.errors)} error(s)")
            return "\n".join(lines)
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


def sweep(request: SweepRequest, result: SweepResult | None = None) -> SweepResult:
    """Run the whole job. Raises ValueError (a bad request), `gitops.GitError`, `gh.GhError` and the
    smoke's `SetupError` / `UsageError`: each a message for the user, to exit 2 with. `result`, when
    given, is filled in as the sweep goes, so that a caller holds what was done before a failure.
    Git runs without the caller's repository variables (a hook's GIT_INDEX_FILE, GIT_DIR...)."""
    check_request(request)
    _check_descriptors()
    result = result if result is not None else SweepResult(request.branch, request.base)
    with gitops.own_environment():
        _sweep(request, result)
    return result


def _check_descriptors() -> None:
    """Have at least DESCRIPTORS open files allowed, raising the soft limit within the hard one:
    git's pipes run out below that, mid-sweep, where even the clean-up of the worktree fails."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= DESCRIPTORS:
        return
    if hard != resource.RLIM_INFINITY and hard < DESCRIPTORS:
        raise gitops.GitError(f"sweep needs {DESCRIPTORS} open files, and `ulimit -n` allows {hard}; "
                              "raise the limit (nothing was changed)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, hard))


def check_request(request: SweepRequest) -> None:
    """Refuse a bad request before anything is read or changed."""
    if request.commit_per not in COMMIT_PER:
        raise ValueError(f"--commit-per must be one of {', '.join(COMMIT_PER)}")
    if request.push is not None and not request.push.strip():
        raise ValueError("--push needs a remote (a name, URL or path), not an empty string")
    if request.open_pr and not request.push:
        raise ValueError("--open-pr needs --push REMOTE: the PR's branch must be on GitHub first")
    if (request.draft or request.labels or request.pr_repo) and not request.open_pr:
        raise ValueError("--draft, --label and --pr-repo need --open-pr")
    if request.pr_repo is not None and not re.fullmatch(r"[\w.-]+/[\w.-]+", request.pr_repo):
        raise ValueError(f"--pr-repo must look like OWNER/NAME, not {request.pr_repo!r}")
    if request.pr_body is not None:
        _check_pr_body(request.pr_body)
    if request.smoke:
        Tier.parse(request.smoke)


def _check_pr_body(path: Path) -> None:
    if not str(path) or path.is_dir():
        raise ValueError(f"--pr-body {str(path)!r} is a folder; give a file name")
    if not path.parent.is_dir():
        raise ValueError(f"--pr-body {path}: folder {path.parent} does not exist")


def _sweep(request: SweepRequest, result: SweepResult) -> None:
    repo = gitops.open_repo(request.repo)
    if request.push:
        request = replace(request, push=gitops.remote_location(repo, request.push))
    result.base = base = gitops.resolve(repo, request.base)
    gitops.check_branch_name(repo, request.branch)
    if not request.dry_run:
        result.notes += sweeptree.remove_stale(repo)
    if gitops.is_dirty(repo):
        result.notes.append(f"{repo.working_tree_dir} has uncommitted or untracked files; the sweep sees commit {base[:12]} only")
    local = gitops.branch_tip(repo, request.branch)
    _check_owner(repo, base, local, request, f"branch {request.branch!r}")
    who = gitops.identity(repo, request.author)
    with sweeptree.worktree(repo, base) as tree:
        top = gitops.work_tree(tree)
        if request.dry_run:
            _plan(repo, tree, top, base, local, request, result)
            return
        remote = _remote_tip(tree, base, request)
        built = _build(tree, top, base, config.load(top, **request.overrides), request.commit_per, who)
        _record(result, built, top)
        if not built.commits:
            if local:
                result.notes.append(f"branch {request.branch!r} left as it was")
            return
        new = gitops.commits_between(tree, base, built.commits[-1])
        kept = next((tip for tip in (local, remote) if tip and _same(tree, base, tip, new)), None)
        result.commit = kept or built.commits[-1]
        result.commits = [c.sha for c in gitops.commits_between(tree, base, result.commit)]
        if request.smoke:
            result.smoke = run_smoke([top / f for f in result.files], tier=request.smoke, base=base)
        _describe(repo, tree, request, result, result.commit)
        if result.commit != local:
            gitops.set_branch(repo, request.branch, result.commit, local)
        result.status = "unchanged" if kept else "updated" if local or remote else "created"
        if result.smoke and not result.smoke.ok:
            result.notes.append("the smoke run failed: not pushed, no PR opened")
            return
        if request.push:
            result.push_updated = remote != result.commit
            if result.push_updated:
                gitops.push(tree, request.push, request.branch, remote)
            result.pushed = True
    if request.open_pr:
        assert result.pr_body is not None
        result.pr = gh.open_pr(gitops.work_tree(repo), _pull_request(repo, request, result.fixed, result.pr_body))


def _pull_request(repo: git.Repo, request: SweepRequest, fixed: list[Finding], body: Path) -> gh.PullRequest:
    """The PR to open: into --pr-repo, else the repository of the base's remote, else the pushed-to
    one; from the branch on the pushed-to repository (a fork, when they differ)."""
    assert request.push
    head_repo = gh.repository(gitops.remote_url(repo, request.push))
    base_remote = gitops.remote_of(repo, request.base)
    target = request.pr_repo or (base_remote and gh.repository(gitops.remote_url(repo, base_remote))) or head_repo
    return gh.PullRequest(
        branch=request.branch,
        base=gitops.branch_of(repo, request.base),
        title=commit_message.title(fixed),
        body_file=body,
        repo=target,
        head_repo=head_repo,
        draft=request.draft,
        labels=request.labels,
    )


def _plan(
    repo: git.Repo, tree: git.Repo, top: Path, base: str, local: str | None,
    request: SweepRequest, result: SweepResult,
) -> None:
    """What a real run would do, found by a fix run that writes nothing; refs, remote and checkout untouched."""
    result.status = "dry run"
    report = engine.fix([top], config.load(top, **request.overrides), write=False)
    _record(result, _Built(report=report, unfixed=report.remaining), top)
    plan = result.plan
    plan.append(f"base: {base} ({request.base})")
    if not report.changes:
        plan.append(f"branch {request.branch}: nothing to fix, left as it is")
        return
    per = "one commit" if request.commit_per == "run" else "one commit per rule"
    state = f"update it (now at {local[:12]})" if local else "create it"
    plan.append(f"branch {request.branch}: {state} with {per} on the base, unless it already holds these fixes")
    if request.smoke:
        plan.append(f"smoke: the {request.smoke} tier on the fixed files; a failure stops the push and the PR")
    if request.pr_body:
        plan.append(f"PR body: write to {request.pr_body}")
    if request.push:
        tip = gitops.remote_tip(tree, request.push, request.branch)
        where = f"now at {tip[:12]}" if tip else "absent there"
        plan.append(f"push: refs/heads/{request.branch} to {request.push} ({where}), with a lease, no tags")
        if tip and gitops.has_commit(tree, tip):
            _check_owner(tree, base, tip, request, f"{request.push} branch {request.branch!r}")
        elif tip:
            plan.append("push: the remote branch's commits will be checked for other people's work first")
    if request.open_pr:
        pr = _pull_request(repo, request, result.fixed, request.pr_body or _default_body(repo))
        where = pr.repo or "the current directory's repository"
        plan.append(f"PR in {where}: edit the open one from {pr.head}, else {shlex.join(pr.create_command())}")


def _record(result: SweepResult, built: _Built, top: Path) -> None:
    """Copy what the build found into the result, with paths relative to the repo root."""
    result.fixed = [_relative(f, top) for f in built.report.fixed]
    result.unfixed = [_relative(f, top) for f in built.unfixed]
    result.errors = [FileError(_path(e.path, top), e.message) for e in built.report.errors]
    result.files = sorted({_path(c.path, top).as_posix() for c in built.report.changes})


def _describe(repo: git.Repo, tree: git.Repo, request: SweepRequest, result: SweepResult, commit: str) -> None:
    """The diff stat and the PR body (written to --pr-body, or to the git dir for --open-pr), before
    the branch moves, so that a body that cannot be written changes nothing."""
    result.diffstat = gitops.diff(tree, result.base, commit, "--stat")
    smoke = None
    if result.smoke:
        smoke = prbody.Smoke(result.smoke.ok, result.smoke.summary(), tuple(result.smoke.engine_evidence()))
    result.pr_text = prbody.render(result.fixed, result.unfixed, result.base, fix_args(request.overrides), smoke)
    result.pr_body = request.pr_body
    if result.pr_body is None and request.open_pr:
        result.pr_body = _default_body(repo)
        result.pr_body.parent.mkdir(exist_ok=True)
    if result.pr_body is not None:
        try:
            result.pr_body.write_text(result.pr_text, encoding="utf-8")
        except OSError as error:
            raise ValueError(f"cannot write the PR body to {result.pr_body}: {error.strerror or error}") from None


def _default_body(repo: git.Repo) -> Path:
    """Where the PR body goes for --open-pr without --pr-body."""
    return Path(repo.git_dir) / "contractfix" / "PR_BODY.md"


def _check_owner(repo: git.Repo, base: str, tip: str | None, request: SweepRequest, where: str) -> None:
    """Refuse to replace commits someone else made on the branch, unless --force."""
    if tip is None or request.force:
        return
    foreign = [c for c in gitops.commits_between(repo, base, tip) if not commit_message.is_ours(c.message, c.tree, c.parent)]
    if foreign:
        shown = "\n".join(f"  {c.sha[:12]} {c.author}: {c.summary}" for c in foreign[:10])
        more = f"\n  ... and {len(foreign) - 10} more" if len(foreign) > 10 else ""
        raise gitops.GitError(
            f"{where} has commits not made by contractfix, or changed since it made them; refusing to replace them "
            f"(--force to replace anyway, or --branch NAME to use another branch):\n{shown}{more}"
        )


def _remote_tip(tree: git.Repo, base: str, request: SweepRequest) -> str | None:
    """The remote branch's commit (fetched, and checked like the local branch), if pushing."""
    if not request.push:
        return None
    tip = gitops.remote_tip(tree, request.push, request.branch)
    if tip:
        gitops.fetch(tree, request.push, request.branch)
        _check_owner(tree, base, tip, request, f"{request.push} branch {request.branch!r}")
    return tip


def _build(tree: git.Repo, top: Path, base: str, options: config.Options, per: str, who: gitops.Identity) -> _Built:
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


def _commit(tree: git.Repo, built: _Built, report: Report, parent: str, who: gitops.Identity) -> None:
    if not report.changes:
        return
    top = gitops.work_tree(tree)
    fixed = [_relative(f, top) for f in report.fixed]
    left = [_relative(f, top) for f in report.remaining]
    message = commit_message.message(fixed, left)
    sign = lambda written: commit_message.sign(message, written, parent)  # noqa: E731
    built.commits.append(gitops.commit(tree, [c.path for c in report.changes], sign, parent, who))


def _same(repo: git.Repo, base: str, tip: str, new: list[gitops.CommitInfo]) -> bool:
    """Whether `tip` already holds exactly the commits just built (same trees, same messages, same
    base). Records are left out: they hold the parents' shas, which differ by their commit times."""
    old = gitops.commits_between(repo, base, tip)
    return bool(old) and old[0].parent == base and _shape(old) == _shape(new)


def _shape(commits: list[gitops.CommitInfo]) -> list[tuple[str, str]]:
    return [(c.tree, commit_message.unsigned(c.message).strip()) for c in commits]


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
    """`path` relative to `top`; a symbolic link keeps its own name (only its folder is resolved)."""
    path = Path(path).absolute()
    return Path(os.path.relpath(path.parent.resolve() / path.name, top.resolve()))


def _relative(finding: Finding, top: Path) -> Finding:
    evidence = tuple(replace(e, path=_path(e.path, top)) for e in finding.evidence)
    return replace(finding, path=_path(finding.path, top), evidence=evidence)
