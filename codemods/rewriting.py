"""The rewrites of one fix round, one file a job: rewritten, verified on its own, and analyzed
again for the round's re-check. libcst costs tens of milliseconds a file where the check of the
same file costs a few, so with more than a few files the jobs run in worker processes, one per
CPU (a single CPU keeps them in this process, as a pool would only add its start).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import analysis, progress
from .edits import Edit
from .facts import ModuleFacts
from .workers import UNPARSABLE, die_with, parse_problem, pool_size

if TYPE_CHECKING:
    from .apply import Rewrite

POOLED_FROM = 6
"""Files to rewrite from which a pool pays for its start (about 40 ms, and libcst's import in each
worker where this process has not imported it)."""


@dataclass(frozen=True)
class Job:
    path: Path
    source: bytes
    edits: tuple[Edit, ...]
    module: str
    """The file's dotted module name, for its facts."""


@dataclass(frozen=True)
class Done:
    """A job's outcome: the verified rewrite and the facts of its text, or why there is none
    (`problem`); neither where the edits change nothing."""

    rewrite: Rewrite | None = None
    facts: ModuleFacts | None = None
    problem: str = ""


def run(jobs: Sequence[Job], workers: int) -> Iterator[Done]:
    """Each job's outcome, in order, with the files-fixed progress."""
    count = pool_size(workers, len(jobs)) if len(jobs) >= POOLED_FROM else 1
    if count < 2:
        yield from progress.track((rewrite(job) for job in jobs), "files fixed", len(jobs))
        return
    from concurrent.futures import ProcessPoolExecutor

    from . import apply  # noqa: F401 (libcst imported once here, not in each forked worker)

    with ProcessPoolExecutor(count, initializer=die_with, initargs=(os.getpid(),)) as pool:
        chunk = max(1, len(jobs) // (count * 8))
        yield from progress.track(pool.map(rewrite, jobs, chunksize=chunk), "files fixed", len(jobs))


def rewrite(job: Job) -> Done:
    """One file rewritten by its edits and verified: the rewrite compiles whole and changes only
    the edited spans; one file's failure never costs the others their fixes. A fix that fails
    in a file that does not parse says so, as the check would (the rewrite parses only what
    its edits touch, and the compile of the result is what proves the rest)."""
    from .apply import FixError, oversized, verify_scope, verify_syntax
    from .apply import rewrite as apply_edits

    problem = oversized(job.source)
    if problem:
        return Done(problem=f"fix not applied: {problem}")
    try:
        result = apply_edits(job.source, job.edits)
        verify_syntax(result, job.path)
        verify_scope(result)
    except (FixError, OSError) as error:
        return Done(problem=_unparsable(job) or f"fix not applied: {error}")
    except Exception as error:  # noqa: BLE001 (reported as the file's error, the run goes on)
        return Done(problem=_unparsable(job) or f"fix not applied: internal error: {type(error).__name__}: {error}")
    if result.after == result.before:
        return Done()
    try:
        facts = analysis.analyze_source(result.after, str(job.path), job.module)
    except UNPARSABLE as error:
        return Done(problem=f"fix not applied: the fixed file cannot be analyzed: {parse_problem(error)}")
    return Done(rewrite=result, facts=facts)


def _unparsable(job: Job) -> str:
    """What is wrong with the file's text as Python parses it ("": nothing)."""
    try:
        ast.parse(job.source, filename=str(job.path))
    except UNPARSABLE as error:
        return parse_problem(error)
    return ""
