"""Facts of the sources a run reads, parsed in worker processes while the rest are still read.

A source whose facts are cached is read back once every source is read. The others are parsed in
the main process when they are few; once `PARALLEL_THRESHOLD` are missing, a pool of workers
starts and takes them in batches as they are read, so that reading a tree overlaps parsing it.
A worker stores the facts it parses in the cache and sends the stored bytes.
"""

from __future__ import annotations

import os
import pickle
import resource
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from . import analysis, progress
from .cache import FactsCache, dumps
from .facts import ModuleFacts

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

PARALLEL_THRESHOLD = 48
"""Missing files from which a pool pays for its start."""
BATCH = 8
"""Files handed to a worker at once: few enough that the last batches spread over the workers."""
UNPARSABLE = (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError)

Job = tuple[str, bytes, str]
"""A file's path, bytes and dotted module name."""
Result = ModuleFacts | str
"""A file's facts, or what its parse says is wrong with it."""
Sent = bytes | str
"""What a worker sends for a file: its facts' cache entry (`cache.dumps`), or its problem."""


def parse_problem(error: Exception) -> str:
    """What a parse that raised `error` (one of UNPARSABLE) says about the file."""
    if isinstance(error, SyntaxError):
        return f"syntax error: {error.msg} (line {error.lineno})"
    if isinstance(error, (RecursionError, MemoryError)):
        return "cannot parse: too deeply nested for Python's parser"
    return f"cannot parse: {error}"


class Parser:
    """Takes sources in order (`add`) and gives back their facts in the same order (`results`).
    Use as a context manager: leaving it stops the workers, also when the run raises."""

    def __init__(self, cache: FactsCache, jobs: int) -> None:
        self.cache = cache
        self.jobs = jobs
        self.keys: list[str] = []
        self.found: list[Result | None] = []
        """Each source's facts: read back from the cache, or None until parsed."""
        self.cached: list[tuple[int, Job]] = []
        """(position, job) of each source with an entry in the cache, read back once the sources
        are all read (facts unpickled between reads spread the heap: a warm run takes more
        memory)."""
        self.missing: list[tuple[int, Job]] = []
        """(position, job) of each source to parse."""
        self.submitted = 0
        """How many of `missing` were handed to the pool."""
        self.batches: list[Future[list[Sent]]] = []
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Parser:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def add(self, path: Path, data: bytes, name: str) -> None:
        """A source, with its dotted module name."""
        key = self.cache.key(data, name)
        self.keys.append(key)
        self.found.append(None)
        job = (str(path), data, name)
        if self.cache.has(key):
            self.cached.append((len(self.found) - 1, job))
        else:
            self._miss(len(self.found) - 1, job)

    def results(self, scanned: int = 0) -> Iterator[tuple[str, Result]]:
        """(cache key, facts or problem) of every source added, in order; the facts of each file
        parsed are in the cache, stored by the worker that parsed them or, without workers, here.
        The progress counts `scanned` files (at least those added), as the summary does: those
        that need no parse are done from the start."""
        for position, job in self.cached:
            self.found[position] = self.cache.get(self.keys[position], job[0])
            if self.found[position] is None:
                self._miss(position, job)
        self._submit(1)
        parsed = self._received() if self.pool is not None else (_job(job) for _, job in self.missing)
        total = max(scanned, len(self.found))
        for (position, _), result in zip(self.missing, progress.track(parsed, "files scanned", total, total - len(self.missing)),
                                         strict=True):
            self.found[position] = result
            if self.pool is None and not isinstance(result, str):
                self.cache.put(self.keys[position], result)
        for key, found in zip(self.keys, self.found, strict=True):
            assert found is not None, "every file missing from the cache was parsed"
            yield key, found

    def _received(self) -> Iterator[Result]:
        """The workers' results in order, each batch let go once read: its entries' bytes are
        not kept beside the facts loaded from them."""
        self.batches.reverse()
        while self.batches:
            for sent in self.batches.pop().result():
                yield _loaded(sent)

    def _miss(self, position: int, job: Job) -> None:
        self.missing.append((position, job))
        if self.pool is None and len(self.missing) >= PARALLEL_THRESHOLD:
            workers = pool_size(self.jobs, len(self.missing))
            if workers > 1:
                from concurrent.futures import ProcessPoolExecutor  # with logging and threading: 6 ms a warm run spares

                analysis.analyze_source  # noqa: B018 (loaded once here, not in each forked worker)
                self.pool = ProcessPoolExecutor(workers, initializer=die_with, initargs=(os.getpid(),))
        if self.pool is not None:
            self._submit(BATCH)

    def _submit(self, least: int) -> None:
        """Hand the pool the jobs not yet submitted, in batches of BATCH, once `least` wait."""
        while self.pool is not None and len(self.missing) - self.submitted >= least:
            batch = self.missing[self.submitted : self.submitted + BATCH]
            self.submitted += len(batch)
            jobs, keys = [job for _, job in batch], [self.keys[position] for position, _ in batch]
            self.batches.append(self.pool.submit(_jobs, jobs, keys, self.cache))


def _jobs(batch: list[Job], keys: list[str], cache: FactsCache) -> list[Sent]:
    """In a worker: each file's facts stored in the cache under its key and sent as that entry's
    bytes, or its problem. Pickled once, here: the main process unpickles them, and stores
    nothing again."""
    sent: list[Sent] = []
    for job, key in zip(batch, keys, strict=True):
        result = _job(job)
        if isinstance(result, str):
            sent.append(result)
            continue
        entry = dumps(result)
        cache.write(key, entry)
        sent.append(entry)
    return sent


def _loaded(sent: Sent) -> Result:
    return pickle.loads(sent) if isinstance(sent, bytes) else sent


def _job(job: Job) -> Result:
    path, data, name = job
    try:
        return analysis.analyze_source(data, path, name)
    except UNPARSABLE as error:
        return parse_problem(error)


POOL_DESCRIPTORS = 64
"""Open files a run must be allowed before it starts other processes: each worker, and the child
of the split rules, holds pipes, and a pool that runs out of them mid-start never returns."""


def pool_size(jobs: int, work: int) -> int:
    """Worker processes for `work` files: `jobs` (0: up to 8), never more than the CPUs this
    process may run on, nor than the files; 1 (this process alone) under a low `ulimit -n`."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < POOL_DESCRIPTORS:
        return 1
    return max(1, min(jobs if jobs > 0 else 8, cpus, work))


def die_with(parent: int) -> None:
    """Worker initializer: exit as soon as `parent` is gone. A worker left behind when the main
    process is killed would wait forever for work, holding the caller's output pipe open."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
