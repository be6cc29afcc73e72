"""`fix` grows linearly with the fixes in a file and with the file's length (issue 39): the
exponent fitted to the CPU time of generated files of N, 2N and 4N classes or lines, not a
wall-clock bound. It was above 2 on both before libcst read only the methods it edits and the
line diffs stopped being quadratic in repeated lines."""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

from contractfix import engine
from contractfix.config import Options
from contractfix.families.pp.rules import pp001_key_not_allocated as pp001

from .conftest import MEASUREMENTS

HEAD = """import torch
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory
from vllm.sequence import IntermediateTensors


"""
MAX_EXPONENT = 1.3
REPEATS = 3


def _classes(count: int) -> str:
    """`count` classes, each with one PP001 fix."""
    return HEAD + "".join(pp001.BEFORE.replace("Step3TextModel", f"Model{i}") + "\n\n" for i in range(count))


def _lines(count: int) -> str:
    """One class with a PP001 fix, then clean classes up to `count` lines."""
    parts = [HEAD, pp001.BEFORE, "\n\n"]
    lines = sum(p.count("\n") for p in parts)
    for i in range(count):
        if lines >= count:
            break
        parts.append(pp001.AFTER.replace("Step3TextModel", f"Clean{i}") + "\n\n")
        lines += parts[-1].count("\n")
    return "".join(parts)


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


def _exponent(sizes: list[int], seconds: list[float]) -> float:
    """The least-squares slope of log(seconds) against log(size)."""
    xs, ys = [math.log(s) for s in sizes], [math.log(t) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def _fit(tmp_path: Path, what: str, sizes: list[int], make, fixes) -> float:
    _seconds(tmp_path / "warm", _classes(2), 2)  # imports libcst and warms the caches the runs share
    seconds = [_seconds(tmp_path / str(size), make(size), fixes(size)) for size in sizes]
    exponent = _exponent(sizes, seconds)
    figures = ", ".join(f"{size}: {t:.2f} s" for size, t in zip(sizes, seconds, strict=True))
    MEASUREMENTS.append(f"fix CPU time by {what}: {figures}; fitted exponent {exponent:.2f}")
    return exponent


def test_fix_is_linear_in_the_fixes_of_a_file(tmp_path: Path) -> None:
    assert _fit(tmp_path, "classes fixed in one file", [50, 100, 200], _classes, lambda n: n) < MAX_EXPONENT


def test_fix_is_linear_in_the_length_of_a_file(tmp_path: Path) -> None:
    assert _fit(tmp_path, "lines of a file with one fix", [2500, 5000, 10000], _lines, lambda n: 1) < MAX_EXPONENT
