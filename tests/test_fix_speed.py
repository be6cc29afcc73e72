"""`fix` grows linearly with the fixes in a file and with the file's length (issue 39): the
exponent fitted to the CPU time of generated files of N, 2N and 4N classes or lines, not a
wall-clock bound. It was above 2 on both before libcst read only the methods it edits and the
line diffs stopped being quadratic in repeated lines."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from contractfix import engine
from contractfix.config import Options

from .conftest import MEASUREMENTS, bench_module

generated = bench_module("generated")  # the files bench/bench.py times, so the test and the bench agree

MAX_EXPONENT = 1.3
REPEATS = 3


def _seconds(tmp_path: Path, source: str, fixes: int) -> float:
    """The median CPU time of an in-memory `fix` of `source` (this process only: one job, no cache)."""
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True, exist_ok=True)
    for folder in (models, models.parent, models.parent.parent):
        (folder / "__init__.py").touch()
    (models / "generated.py").write_text(source)
    times = []
    for _ in range(REPEATS):
        start = time.process_time()
        report = engine.fix([models], Options(jobs=1, cache=False), write=False)
        times.append(time.process_time() - start)
        assert len(report.fixed) == fixes and not report.errors
    return statistics.median(times)


def _fit(tmp_path: Path, what: str, sizes: list[int], make, fixes) -> float:
    _seconds(tmp_path / "warm", generated.classes(2), 2)  # imports libcst and warms the caches the runs share
    seconds = [_seconds(tmp_path / str(size), make(size), fixes(size)) for size in sizes]
    exponent = generated.exponent(sizes, seconds)
    figures = ", ".join(f"{size}: {t:.2f} s" for size, t in zip(sizes, seconds, strict=True))
    MEASUREMENTS.append(f"fix CPU time by {what}: {figures}; fitted exponent {exponent:.2f}")
    return exponent


def test_fix_is_linear_in_the_fixes_of_a_file(tmp_path: Path) -> None:
    assert _fit(tmp_path, "classes fixed in one file", [50, 100, 200], generated.classes, lambda n: n) < MAX_EXPONENT


def test_fix_is_linear_in_the_length_of_a_file(tmp_path: Path) -> None:
    assert _fit(tmp_path, "lines of a file with one fix", [2500, 5000, 10000], generated.lines, lambda n: 1) < MAX_EXPONENT
