"""Progress of long runs: rich bars on stderr while `shown()` is active and stderr is a terminal.

The library reports stages with `task(...)` whether or not anything is shown; only the command
line turns the display on, so output, pipes and logs are never touched.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import Protocol, TypeVar

T = TypeVar("T")


class Advance(Protocol):
    """What `task` yields: advance the task by `amount` (one by default)."""

    def __call__(self, amount: int = 1) -> None: ...

_display = None


def _silent(amount: int = 1) -> None:
    """Advance nothing (no display is active)."""


@contextmanager
def shown() -> Iterator[None]:
    """Draw the tasks reported inside this block, if stderr is a terminal (not `TERM=dumb`)."""
    global _display
    if _display is not None or not sys.stderr.isatty() or os.environ.get("TERM") == "dumb":
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    display = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    _display = display
    try:
        with display:
            yield
    finally:
        _display = None


@contextmanager
def task(description: str, total: int | None = None) -> Iterator[Advance]:
    """A stage of work (files analyzed, fixes applied, a smoke tier); yields `advance(amount=1)`.
    Without a total the stage shows as a spinner until the block ends."""
    display = _display
    if display is None:
        yield _silent
        return
    task_id = display.add_task(description, total=total)

    def advance(amount: int = 1) -> None:
        display.advance(task_id, amount)

    try:
        yield advance
    finally:
        display.remove_task(task_id)


def track(items: Iterable[T], description: str, total: int | None = None, done: int = 0) -> Iterator[T]:
    """Yield `items`, advancing a task by one per item; `done` of `total` are counted from the start.
    `total` defaults to `len(items)` when it has one."""
    if total is None and isinstance(items, Sized):
        total = len(items)
    with task(description, total) as advance:
        advance(done)
        for item in items:
            yield item
            advance()
