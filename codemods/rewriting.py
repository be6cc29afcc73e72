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
from .cache import FactsCache
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
    cache: Path | None = None
    """The facts cache, which holds the facts of `source` where the check read it: the classes
    before the first edited line keep theirs (`analysis.reanalyze`), read by each worker."""


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

    # the longest files first, so that the last chunks, which one worker may finish alone, are short
    order = sorted(range(len(jobs)), key=lambda position: -len(jobs[position].source))
    done: dict[int, Done] = {}
    with ProcessPoolExecutor(count, initializer=die_with, initargs=(os.getpid(),)) as pool:
        chunk = max(1, len(jobs) // (count * 16))
        outcomes = pool.map(rewrite, [jobs[position] for position in order], chunksize=chunk)
        for position, outcome in zip(order, progress.track(outcomes, "files fixed", len(jobs)), strict=True):
            done[position] = outcome
    yield from (done[position] for position in range(len(jobs)))


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
        facts = _analyzed(job, result.after)
    except UNPARSABLE as error:
        return Done(problem=f"fix not applied: the fixed file cannot be analyzed: {parse_problem(error)}")
    return Done(rewrite=result, facts=facts)


def _analyzed(job: Job, after: bytes) -> ModuleFacts:
    """The facts of the rewritten text, from those the cache holds for the text before where it
    holds them."""
    cache = FactsCache(job.cache)
    earlier = cache.get(cache.key(job.source, job.module), str(job.path))
    if earlier is None:
        return analysis.analyze_source(after, str(job.path), job.module)
    return analysis.reanalyze(after, str(job.path), job.module, job.source, earlier)


def _unparsable(job: Job) -> str:
    """What is wrong with the file's text as Python parses it ("": nothing)."""
    try:
        ast.parse(job.source, filename=str(job.path))
    except UNPARSABLE as error:
        return parse_problem(error)
    return ""
