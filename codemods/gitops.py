"""Thin GitPython wrappers (named gitops so that `import git` is always GitPython): open a repo, a throwaway worktree, commits, branches, push, changed files.

Every failure a user can cause raises `GitError` with a message meant for them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git

NO_HOOKS = "core.hooksPath=" + os.devnull
KEPT_ENV = {"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"}


class GitError(Exception):
    """A git problem to report to the user as is (exit 2)."""


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"

    def env(self) -> dict[str, str]:
        """Author and committer, as git's environment variables."""
        return {
            f"GIT_{role}_{part}": value
            for role in ("AUTHOR", "COMMITTER")
            for part, value in (("NAME", self.name), ("EMAIL", self.email))
        }


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parent: str | None
    tree: str
    author: str
    summary: str
    message: str


def init_repo(path: Path, who: Identity, message: str) -> git.Repo:
    """A new repository at `path` (branch main, `who` as its identity) with one commit of all it holds."""
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", who.name)
        config.set_value("user", "email", who.email)
    repo.git.add("-A")
    repo.git.commit("--no-verify", "-m", message, env=who.env())
    return repo


def open_repo(path: Path) -> git.Repo:
    """The non-bare repository containing `path`, with at least one commit."""
    try:
        repo = git.Repo(path, search_parent_directories=True)
    except git.NoSuchPathError:
        raise GitError(f"{path}: no such file or directory") from None
    except git.InvalidGitRepositoryError:
        raise GitError(f"{path} is not inside a git repository") from None
    if repo.bare:
        raise GitError(f"{path} is a bare repository; run in a clone with a working tree")
    if not repo.head.is_valid():
        raise GitError(f"{repo.working_tree_dir} has no commits yet; commit something first")
    return repo


def work_tree(repo: git.Repo) -> Path:
    """The root of the repository's working tree."""
    if repo.working_tree_dir is None:
        raise GitError(f"{repo.git_dir} is a bare repository; run in a clone with a working tree")
    return Path(repo.working_tree_dir)


def resolve(repo: git.Repo, ref: str) -> str:
    """The full sha of the commit `ref` names."""
    sha = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", with_exceptions=False)
    if not sha:
        raise GitError(f"{ref!r} does not name a commit")
    return sha


def branch_of(repo: git.Repo, ref: str) -> str | None:
    """The branch name behind `ref` (HEAD, a local or a remote-tracking branch), if any."""
    name = repo.git.rev_parse("--abbrev-ref", ref, with_exceptions=False)
    if not name or name == "HEAD":
        return None
    remotes = [r.name for r in repo.remotes]
    head, _, rest = name.partition("/")
    return rest if rest and head in remotes else name


def check_branch_name(repo: git.Repo, name: str) -> None:
    """Refuse a name git rejects, one that clashes with another branch, or one checked out somewhere."""
    if not name or repo.git.check_ref_format("--branch", name, with_exceptions=False) != name:
        raise GitError(f"{name!r} is not a valid branch name")
    heads = {h.name for h in repo.heads}
    parts = name.split("/")
    for prefix in ("/".join(parts[:i]) for i in range(1, len(parts))):
        if prefix in heads:
            raise GitError(f"branch {name!r} cannot be created: branch {prefix!r} exists")
    nested = sorted(h for h in heads if h.startswith(name + "/"))
    if nested:
        raise GitError(f"branch {name!r} cannot be created: branch {nested[0]!r} exists below it")
    for path, branch, _ in worktrees(repo):
        if branch == name:
            raise GitError(f"branch {name!r} is checked out in {path}; pick another --branch or switch away")


def branch_tip(repo: git.Repo, name: str) -> str | None:
    return repo.git.rev_parse("--verify", "--quiet", f"refs/heads/{name}", with_exceptions=False) or None


def commits_between(repo: git.Repo, base: str, tip: str) -> list[CommitInfo]:
    """The commits reachable from `tip` but not from `base`, oldest first."""
    return [_info(c) for c in reversed(list(repo.iter_commits(f"{base}..{tip}")))]


def _info(commit: git.Commit) -> CommitInfo:
    return CommitInfo(
        sha=commit.hexsha,
        parent=commit.parents[0].hexsha if commit.parents else None,
        tree=commit.tree.hexsha,
        author=f"{commit.author.name} <{commit.author.email}>",
        summary=commit.summary if isinstance(commit.summary, str) else commit.summary.decode(),
        message=commit.message if isinstance(commit.message, str) else commit.message.decode(),
    )


def identity(repo: git.Repo, author: str | None = None) -> Identity:
    """`author` ("Name <email>"), else git's author from the environment or the configuration."""
    if author is not None:
        match = re.fullmatch(r"\s*([^<>]*?)\s*<([^<>\s]+@[^<>\s]+)>\s*", author)
        if not match or not match.group(1):
            raise GitError(f"--author must look like 'Name <email@example.com>', not {author!r}")
        return Identity(match.group(1), match.group(2))
    name = os.environ.get("GIT_AUTHOR_NAME") or _config(repo, "user.name")
    email = os.environ.get("GIT_AUTHOR_EMAIL") or _config(repo, "user.email")
    if not name or not email:
        raise GitError(
            "no commit identity: set user.name and user.email (git config) or pass --author 'Name <email>'"
        )
    return Identity(name, email)


def _config(repo: git.Repo, key: str) -> str:
    return repo.git.config("--get", key, with_exceptions=False).strip()


def is_dirty(repo: git.Repo) -> bool:
    """Uncommitted changes or untracked files in the user's checkout."""
    return repo.is_dirty(untracked_files=True)


def worktrees(repo: git.Repo) -> list[tuple[Path, str | None, str | None]]:
    """(path, branch or None, lock reason or None) of every worktree of `repo`."""
    out: list[tuple[Path, str | None, str | None]] = []
    for block in repo.git.worktree("list", "--porcelain").split("\n\n"):
        fields = dict((line + " ").split(" ", 1) for line in block.splitlines() if line)
        if "worktree" not in fields:
            continue
        branch = fields.get("branch", "").strip().removeprefix("refs/heads/") or None
        locked = fields["locked"].strip() if "locked" in fields else None
        out.append((Path(fields["worktree"].strip()), branch, locked))
    return out


@contextmanager
def own_environment() -> Iterator[None]:
    """Run git without the repository variables of a caller (GIT_DIR, GIT_INDEX_FILE, GIT_WORK_TREE...).

    A git hook exports them for its own repository and index; inherited, they would point the sweep's
    worktree at the user's index and commit. `-c` options (GIT_CONFIG_PARAMETERS) are kept."""
    names = set(git.Git().rev_parse("--local-env-vars").split()) - KEPT_ENV
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def commit(tree_repo: git.Repo, paths: list[Path], sign: Callable[[str], str], parent: str, who: Identity) -> str:
    """Stage `paths` in a worktree and record them as one commit on top of `parent` (no hooks, HEAD
    unmoved). `sign(tree)` gives the message for the staged tree. Signed when commit.gpgSign is set,
    as `git commit` would be (commit-tree ignores that setting)."""
    tree_repo.git.add("--", *(str(p) for p in paths))
    tree = tree_repo.git.write_tree()
    signing = ["-S"] if _config_bool(tree_repo, "commit.gpgSign") else []
    try:
        return tree_repo.git.commit_tree(tree, "-p", parent, *signing, "-m", sign(tree), env=who.env())
    except git.GitCommandError as error:
        if signing:
            raise GitError(f"cannot sign the commit (commit.gpgSign is set): {error_text(error)}") from None
        raise


def _config_bool(repo: git.Repo, key: str) -> bool:
    return repo.git.config("--type=bool", "--get", key, with_exceptions=False).strip() == "true"


def set_branch(repo: git.Repo, name: str, new: str, old: str | None) -> None:
    """Point branch `name` at `new`, only if it still points at `old` (None: does not exist)."""
    try:
        repo.git.update_ref("-m", "contractfix sweep", f"refs/heads/{name}", new, old or "")
    except git.GitCommandError as error:
        if branch_tip(repo, name) != old:
            raise GitError(f"branch {name!r} changed during the sweep; re-run ({error_text(error)})") from None
        raise GitError(f"cannot update branch {name!r}: {error_text(error)}") from None


def remote_location(repo: git.Repo, remote: str) -> str:
    """`remote` as git must see it from any directory: a configured remote's name, a URL, an absolute path."""
    if remote in {r.name for r in repo.remotes} or not Path(remote).exists():
        return remote
    return str(Path(remote).resolve())


def remote_url(repo: git.Repo, remote: str) -> str:
    """The push URL of a configured remote as written in the configuration (before any insteadOf
    rewriting: it names the hosted repository); `remote` itself for a URL or a path."""
    if remote in {r.name for r in repo.remotes}:
        return _config(repo, f"remote.{remote}.pushurl") or _config(repo, f"remote.{remote}.url") or remote
    return remote


def remote_of(repo: git.Repo, ref: str) -> str | None:
    """The remote behind `ref`: a remote-tracking branch's, or the one a local branch tracks."""
    full = repo.git.rev_parse("--symbolic-full-name", ref, with_exceptions=False).strip()
    if full.startswith("refs/remotes/"):
        return full.split("/")[2]
    if full.startswith("refs/heads/"):
        return _config(repo, f"branch.{full.removeprefix('refs/heads/')}.remote") or None
    return None


def has_commit(repo: git.Repo, sha: str) -> bool:
    return bool(repo.git.rev_parse("--verify", "--quiet", f"{sha}^{{commit}}", with_exceptions=False))


def remote_tip(repo: git.Repo, remote: str, name: str) -> str | None:
    """What `remote` (a remote name, URL or path) holds for branch `name`."""
    try:
        out = repo.git.ls_remote("--end-of-options", remote, f"refs/heads/{name}")
    except git.GitCommandError as error:
        raise GitError(f"cannot read remote {remote!r}: {error_text(error)}") from None
    assert isinstance(out, str)  # git's output as text: no as_process, no extended output
    return out.split()[0] if out.strip() else None


def fetch(repo: git.Repo, remote: str, name: str) -> None:
    """Bring the objects of `remote`'s branch `name` here (no ref of the user's is touched)."""
    try:
        repo.git.fetch("--no-tags", "--end-of-options", remote, f"refs/heads/{name}")
    except git.GitCommandError as error:
        raise GitError(f"cannot fetch {name!r} from {remote!r}: {error_text(error)}") from None


def push(repo: git.Repo, remote: str, name: str, expect: str | None) -> None:
    """Push branch `name` and nothing else (no tags, whatever push.followTags says), with a lease:
    the remote must still hold `expect` (None: no such branch)."""
    ref = f"refs/heads/{name}"
    lease = f"--force-with-lease={ref}:{expect or ''}"
    try:
        repo.git.push("--no-follow-tags", lease, "--end-of-options", remote, f"{ref}:{ref}")
    except git.GitCommandError as error:
        raise GitError(f"push of {name!r} to {remote!r} refused: {error_text(error)}") from None


def diff(repo: git.Repo, old: str, new: str, *options: str) -> str:
    return repo.git.diff(*options, old, new)


def default_branch_base(repo: git.Repo) -> str:
    """The merge base of HEAD with the default branch (origin's HEAD, else main or master)."""
    candidates = ["refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master"]
    for ref in candidates:
        if repo.git.rev_parse("--verify", "--quiet", ref, with_exceptions=False):
            return repo.git.merge_base("HEAD", ref)
    raise GitError("no default branch found (origin/HEAD, main, master); pass --base REF")


def changed_files(repo: git.Repo, base: str) -> list[Path]:
    """Python files added, copied, modified or renamed since `base`, committed or not, plus untracked ones."""
    diff = repo.git.diff("-z", "--name-only", "--no-renames", "--diff-filter=ACMR", base, "--", "*.py")
    names = diff.split("\0") + repo.git.ls_files("-z", "--others", "--exclude-standard", "--", "*.py").split("\0")
    root = work_tree(repo).resolve()
    return sorted({root / n for n in names if n and (root / n).is_file()})


def error_text(error: git.GitCommandError) -> str:
    """Git's own complaint, on one line."""
    text = (error.stderr or "").strip().removeprefix("stderr:").strip().strip("'").strip()
    return " ".join(text.split()) or str(error)


def changed_under(paths: list[Path], base: str | None) -> list[Path]:
    """Python files under `paths` changed against `base` (default: the merge base with the default branch)."""
    repo = open_repo(paths[0])
    start = resolve(repo, base) if base else default_branch_base(repo)
    roots = [p.resolve() for p in paths]
    return [f for f in changed_files(repo, start) if any(f == r or r in f.parents for r in roots)]
