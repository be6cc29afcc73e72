"""The static tier, per changed file: it compiles, the contract check is clean, and its diff against
the base revision touches only what contractfix's fixes would have changed there.

The last check replays the fix on the base version: the base files are written to a scratch
tree that mirrors their place under the import root, and `engine.fix` runs there (no write)
with the real tree's registry, so the rest of the tree still resolves.
"""

from __future__ import annotations

import dataclasses
import difflib
import shutil
import tempfile
import time
from pathlib import Path

from .records import CheckRecord, Status

TIER = "static"


def run_static(paths: list[Path], base: str = "HEAD") -> list[CheckRecord]:
    records: list[CheckRecord] = []
    bases = {p.resolve(): _base_version(p.resolve(), base) for p in paths}
    for path in bases:
        records.append(_compile(path))
        records.append(_contract_check(path))
        records.append(_diff_scope(path, bases, base))
    return records


def _record(path: Path, check: str, status: Status, start: float, **fields) -> CheckRecord:
    return CheckRecord("", TIER, check, status, path=str(path), duration_s=time.monotonic() - start, **fields)


def _compile(path: Path) -> CheckRecord:
    start = time.monotonic()
    try:
        compile(path.read_bytes(), str(path), "exec")
    except (SyntaxError, ValueError, OSError) as error:
        return _record(path, "compile", Status.FAIL, start, error=f"{type(error).__name__}: {error}")
    return _record(path, "compile", Status.PASS, start)


SMOKED = "PP"
"""The family whose contract the smoke's tiers prove: a finding of another family (a layer without
a `prefix`, say) in the file neither fails nor passes this check; it is counted in the reason."""


def _contract_check(path: Path) -> CheckRecord:
    start = time.monotonic()
    from .. import config, engine

    report = engine.check([path], config.load(path))
    everything_here = [f for f in report.findings if Path(f.path).resolve() == path]
    here = [f for f in everything_here if f.rule.startswith(SMOKED)]
    mine = [f for f in here if not f.latent]
    errors = [e for e in report.errors if Path(e.path).resolve() == path]
    if errors:
        return _record(path, "contract-check", Status.FAIL, start, error="; ".join(e.message for e in errors))
    if mine:
        text = "\n".join(f"{f.path}:{f.line}: {f.rule} {f.message}" for f in mine)
        keys = sorted({k for f in mine for k in f.keys})
        return _record(path, "contract-check", Status.FAIL, start, error=text, keys={"findings": keys} if keys else {})
    latent = len(here) - len(mine)
    reasons = [f"{len(report.findings) - len(here)} findings elsewhere"] if len(report.findings) > len(here) else []
    reasons += [f"{latent} latent here (unreachable in this release)"] if latent else []
    others = len(everything_here) - len(here)
    reasons += [f"{others} of other families here (prefix, packed modules: their own runtime checks)"] if others else []
    return _record(path, "contract-check", Status.PASS, start, reason="; ".join(reasons))


def _base_version(path: Path, base: str) -> bytes | None:
    """The file's content at revision `base` of its git repository (None: not tracked there)."""
    import git

    from ..gitops import work_tree

    try:
        repo = git.Repo(path.parent, search_parent_directories=True)
        blob = repo.commit(base).tree / path.relative_to(work_tree(repo).resolve()).as_posix()
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.BadName, KeyError, ValueError):
        return None
    return blob.data_stream.read()


def _diff_scope(path: Path, bases: dict[Path, bytes | None], base: str) -> CheckRecord:
    start = time.monotonic()
    before = bases[path]
    if before is None:
        return _record(path, "diff-scope", Status.NA, start, reason=f"not applicable: not tracked by git at {base}, no base to diff")
    after = path.read_bytes()
    if before == after:
        return _record(path, "diff-scope", Status.PASS, start, reason=f"unchanged since {base}")
    planned = replay_fix(path, {p: b for p, b in bases.items() if b is not None})
    stray = stray_lines(before, after, planned)
    if stray:
        return _record(path, "diff-scope", Status.FAIL, start,
                       error=f"lines changed since {base} that no fix touches: {_ranges(stray)}")
    return _record(path, "diff-scope", Status.PASS, start, reason=f"every change since {base} is a fix's")


def replay_fix(path: Path, bases: dict[Path, bytes]) -> bytes:
    """What `contractfix fix --unsafe-fixes` makes of the base version of `path` (with the other
    changed files at their base versions too): a change an unsafe fix makes is a fix's as well."""
    from .. import config, engine
    from ..index import import_root
    from ..registry import find_registry, root_of

    registry = find_registry(path)
    root = root_of(registry) if registry else import_root(path)
    scratch = Path(tempfile.mkdtemp(prefix="contractfix-static-"))
    try:
        for other, content in bases.items():
            if other.is_relative_to(root):
                _mirror(other, root, scratch).write_bytes(content)
        copy = _mirror(path, root, scratch)
        options = dataclasses.replace(config.load(path, registry=(registry,) if registry else ()), unsafe_fixes=True)
        report = engine.fix([copy], options, write=False)
        change = next((c for c in report.changes if Path(c.path).resolve() == copy.resolve()), None)
        return change.after if change else bases[path]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _mirror(path: Path, root: Path, scratch: Path) -> Path:
    """`path`'s place under `scratch`, with its packages' `__init__.py` files copied along."""
    relative = path.relative_to(root)
    target = scratch / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    for depth in range(1, len(relative.parts)):
        init = root.joinpath(*relative.parts[:depth], "__init__.py")
        mirrored = scratch.joinpath(*relative.parts[:depth], "__init__.py")
        if init.is_file() and not mirrored.exists():
            shutil.copyfile(init, mirrored)
    return target


def stray_lines(before: bytes, after: bytes, planned: bytes) -> list[int]:
    """Base line numbers (1-based) that `after` changes and `planned` leaves alone."""
    touched = _touched(before, planned)
    return sorted(_touched(before, after) - touched)


def _touched(before: bytes, after: bytes) -> set[int]:
    """Base lines replaced or deleted, and for insertions the base lines on both sides of them."""
    old, new = before.splitlines(), after.splitlines()
    lines: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            lines.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            lines.update({i1, i1 + 1} & set(range(1, len(old) + 1)))
    return lines


def _ranges(lines: list[int]) -> str:
    spans: list[list[int]] = []
    for line in lines:
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)
