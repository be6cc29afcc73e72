"""Generated model files for measuring how `fix` grows within one file, and the measurement.

`classes(n)` holds n copies of PP001's own example (Step3TextModel sends `residual` without
allocating it: n safe fixes); `lines(n)` holds one among fixed copies, about n lines in all.
`tests/test_fix_speed.py` fits the same exponent in process. `growth` times `fix --diff` and `check` on both series in CPU seconds (the
machine's load moves wall time more) and fits the exponent of time against size, after taking
off the cost of the same command on the smallest file of one class: start-up is not growth.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

from contractfix.rules import ALL

PP001 = ALL["PP001"]

CLASSES = (25, 50, 100, 200)
LINES = (2_500, 5_000, 10_000, 20_000)

HEADER = """\
import torch
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory
from vllm.sequence import IntermediateTensors


"""


def classes(n: int) -> str:
    """n classes, each with one PP001 finding and its safe fix (the rule's own example, renamed)."""
    return HEADER + "".join(PP001.before.replace("Step3TextModel", f"Model{i}") + "\n\n" for i in range(n))


def lines(n: int) -> str:
    """One class with a PP001 fix, then clean classes (the example fixed) up to about n lines."""
    parts = [HEADER, PP001.before, "\n\n"]
    count = sum(p.count("\n") for p in parts)
    for i in range(n):
        if count >= n:
            break
        parts.append(PP001.after.replace("Step3TextModel", f"Clean{i}") + "\n\n")
        count += parts[-1].count("\n")
    return "".join(parts)


def cpu_seconds(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """User and system CPU time of one run of `argv` (and of any child it waited for)."""
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"failed: {' '.join(argv)}")
    return usage.ru_utime + usage.ru_stime


def _restamped(path: Path) -> None:
    """A new modification time, the same bytes: the facts cache still answers a second run, and a
    check's kept output (`results.py`) does not, so each run analyzes and runs the rules."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))


def exponent(sizes: list[int], seconds: list[float]) -> float:
    """The least-squares slope of log(seconds) against log(size)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(t, 1e-3)) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def growth(scratch: Path, contractfix: str = "contractfix") -> dict:
    """Per series, the sizes, fix and check CPU seconds past the one-class file's, and exponents."""
    env = {**os.environ, "CONTRACTFIX_CACHE_DIR": str(scratch / "growth-cache")}
    folder = scratch / "growth"
    folder.mkdir(exist_ok=True)

    def timed(command: str, text: str, name: str) -> float:
        # a folder each: a file of another size beside it names the same classes, and `fix`
        # would re-check it as a dependent of each rewrite (a cost that grows with the sizes)
        (folder / name).mkdir(exist_ok=True)
        path = folder / name / f"{name}.py"
        path.write_text(text, "utf-8")
        argv = [contractfix, "fix", "--diff", str(path)] if command == "fix" else [contractfix, "check", str(path)]
        runs = []
        for _ in range(3):
            _restamped(path)
            runs.append(cpu_seconds(argv, env, folder))
        return statistics.median(runs)

    base = {command: timed(command, classes(1), "one") for command in ("fix", "check")}
    out = {}
    for what, make, sizes in (("fixable classes", classes, CLASSES), ("lines, one fix", lines, LINES)):
        series = {command: [timed(command, make(n), f"{what[:5]}{n}") - base[command] for n in sizes]
                  for command in ("fix", "check")}
        out[what] = {
            "sizes": list(sizes), "fix": series["fix"], "check": series["check"],
            "fix_exponent": exponent(list(sizes), series["fix"]),
            "check_exponent": exponent(list(sizes), series["check"]),
        }
    return out
