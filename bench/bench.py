"""Benchmark contractfix on real vLLM trees, side by side with libcst and ruff (run by hand).

    pip install -e '.[bench]'
    python bench/bench.py                      # vLLM 0.21.0 and 0.33.0, 7 runs each
    python bench/bench.py --versions 0.33.0 --runs 3 --output results.json

The pinned vLLM wheels are downloaded with pip into a cache outside the repository (default
~/.cache/contractfix, or $CONTRACTFIX_BENCH_CACHE; a wheel already under <cache>/whl/<version>/ is
reused) and their Python sources unpacked under <cache>/bench/src/<version>/. Nothing there is
written by the commands measured: `fix` runs with --diff and the libcst codemod with -u.

The package's bytecode is written first, as an install writes it (see `_compile_package`).
Then the four figures, each beside its reference, pair by pair (--runs pairs; the median of the
per-pair ratios is printed, with the load average):
- the cold whole-tree check against `ruff check --no-cache --select F401`, per version, with every
  family of rules (the default) and with each family alone (`--select PP`, ...);
- a warm one-file check (the pre-commit case) against `python -c pass`;
- `fix --diff --unsafe-fixes` against `check`, on each version and on the newest with one violation
  injected into each model file that has a site for one (tests/mutations.py);
- the growth of `fix` and `check` in one generated file, by fixable classes and by lines, as the
  fitted exponent of CPU time against size (bench/generated.py).
`--page docs` writes docs/benchmark.json and renders docs/benchmark.md from it (bench/page.py).
Then every command runs as a subprocess (interpreter start-up included): one warm-up run, then --runs
timed runs whose median is reported, then one more run sampling the resident memory of the whole
process tree (workers included) every few milliseconds for the peak. "cold" runs get an empty
contractfix facts cache (or ruff --no-cache); "warm" ones a cache filled by the warm-up.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from contractfix.families import FAMILIES

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402 (bench/ is no package: its modules import each other from this folder)
import page  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
VERSIONS = ("0.21.0", "0.33.0")
ONE_FILE = "vllm/model_executor/models/llama.py"
TARGETS = {"check": 1.5, "ratio": 4.0, "one_file": 0.6, "peak_mb": 300.0}
SLOW_RUNS = 3


@dataclass
class Task:
    """One command to time. `cache` is "cold", "warm" or "" (no contractfix cache involved);
    `baseline` names the task its time is divided by in the ratio column. A `slow` task runs at
    most SLOW_RUNS times, without a separate warm-up or memory run (the first run is sampled)."""

    name: str
    argv: list[str]
    cache: str = ""
    baseline: str = "ruff (no cache)"
    slow: bool = False


@dataclass
class Result:
    name: str
    command: str
    times: list[float]
    median: float
    peak_mb: float
    baseline: str = ""
    ratio: float | None = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", default=list(VERSIONS))
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (median reported)")
    parser.add_argument("--cache", type=Path, default=_default_cache(), help="where wheels and sources are kept")
    parser.add_argument("--output", type=Path, help="JSON results (default: <cache>/bench/results.json)")
    parser.add_argument("--cold-ratio", action="store_true", help="only the cold check vs ruff pairs (minutes, not an hour)")
    parser.add_argument("--figures-only", action="store_true", help="the four figures, not every command")
    parser.add_argument("--page", type=Path, help="also write <PAGE>/benchmark.json and render <PAGE>/benchmark.md")
    args = parser.parse_args()
    output = args.output or args.cache / "bench" / "results.json"

    machine = describe_machine()
    print(_machine_line(machine), flush=True)
    print(_compile_package(), flush=True)
    runs = {}
    figures: dict = {"cold_check_vs_ruff": {}}
    trees = {version: sources(version, args.cache) for version in args.versions}
    for version, tree in trees.items():
        print(f"\n== vLLM {version}: {tree} ({_count_py(tree)} Python files)", flush=True)
        pairs = cold_pairs(tree, args.runs)
        figure = figures["cold_check_vs_ruff"][version] = _figure(pairs, files=_count_py(tree))
        _say("cold check vs `ruff check --no-cache --select F401`", figure)
        figure["families"] = {}
        for family in FAMILIES:
            figure["families"][family.prefix] = _figure(cold_pairs(tree, args.runs, family.prefix))
            _say(f"the same, --select {family.prefix}", figure["families"][family.prefix])
    if not args.cold_ratio:
        figures.update(other_figures(trees, args.runs))
    for version, tree in trees.items():
        results = [] if args.cold_ratio or args.figures_only else measure(tasks(tree), args.runs)
        if results:
            print(f"\n== every command on vLLM {version}\n" + table(results), flush=True)
        runs[version] = {"results": [asdict(r) for r in results]}
    document = {
        "machine": machine, "load_average_at_end": os.getloadavg(), "runs_per_command": args.runs, "targets": TARGETS,
        "figures": figures, "results": runs,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    print(f"\nwrote {output}")
    if args.page:
        (args.page / "benchmark.json").write_text(json.dumps(document, indent=2) + "\n", "utf-8")
        (args.page / "benchmark.md").write_text(page.render(document), "utf-8")
        print(f"wrote {args.page / 'benchmark.json'} and {args.page / 'benchmark.md'}")


def other_figures(trees: dict[str, Path], runs: int) -> dict:
    """The one-file, fix and growth figures (see the module's docstring), printed as they come."""
    newest = list(trees)[-1]
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="contractfix-bench-") as scratch:
        figures["one_file_vs_python"] = {
            **_figure(one_file_pairs(trees[newest], runs, scratch)), "file": ONE_FILE, "goal_s": 0.15, "goal_ratio": 3.0,
            "edited": _figure(one_file_pairs(trees[newest], runs, scratch, edited=True)),
        }
        _say(f"warm one-file check of {ONE_FILE} vs `python -c pass`", figures["one_file_vs_python"])
        _say("the same after an edit of the file", figures["one_file_vs_python"]["edited"])
        fix_trees = {f"vLLM {v}": tree for v, tree in trees.items()}
        fix_trees[f"vLLM {newest}, one violation injected per model file"] = mutated(trees[newest], Path(scratch))
        figures["fix_vs_check"] = {}
        for label, tree in fix_trees.items():
            figures["fix_vs_check"][label] = {**_figure(fix_pairs(tree, runs, scratch)), "fixes": _fixable(tree, scratch)}
            _say(f"fix --diff vs check on {label}", figures["fix_vs_check"][label])
        figures["fix_growth"] = generated.growth(Path(scratch), _contractfix())
        for what, g in figures["fix_growth"].items():
            print(f"growth by {what} {g['sizes']}: fix exponent {g['fix_exponent']:.2f}, "
                  f"check exponent {g['check_exponent']:.2f}", flush=True)
    return figures


def _figure(pairs: list[tuple[float, float, float]], **extra) -> dict:
    """The medians of (ours, reference, ratio) pairs."""
    return {
        "ours": statistics.median(p[0] for p in pairs), "reference": statistics.median(p[1] for p in pairs),
        "ratio": statistics.median(p[2] for p in pairs), "pairs": pairs, **extra,
    }


def _say(what: str, figure: dict) -> None:
    print(f"{what}, {len(figure['pairs'])} interleaved pairs: median ratio {figure['ratio']:.2f}x "
          f"({figure['ours']:.3f} s vs {figure['reference']:.3f} s), load average {os.getloadavg()[0]:.1f}", flush=True)


def one_file_pairs(tree: Path, runs: int, scratch: str, edited: bool = False) -> list[tuple[float, float, float]]:
    """(warm one-file check, `python -c pass`, ratio): the caches are filled by a first run, whose
    output the next reuse (`results.py`). `edited`: the file gets a line more before each run (in a
    copy of the tree), so its facts are read again and the rules run, as after an edit."""
    contractfix = _contractfix()
    env = {**os.environ, "CONTRACTFIX_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
    if edited:
        tree = Path(shutil.copytree(tree, Path(tempfile.mkdtemp(dir=scratch)) / tree.name, symlinks=True))
    one = str(tree.parent / ONE_FILE)
    run([contractfix, "check", one], env, scratch)
    pairs = []
    for edit in range(max(runs, 15)):  # a tenth of a second each: more pairs for a steadier median
        if edited:
            with open(one, "a", encoding="utf-8") as file:
                file.write(f"# edit {edit}\n")
        ours = run([contractfix, "check", one], env, scratch)
        theirs = run([sys.executable, "-c", "pass"], env, scratch)
        pairs.append((ours, theirs, ours / theirs))
    return pairs


def fix_pairs(tree: Path, runs: int, scratch: str) -> list[tuple[float, float, float]]:
    """(`fix --diff --unsafe-fixes`, `check`, ratio), each with an empty facts cache."""
    contractfix = _contractfix()
    pairs = []
    for _ in range(min(runs, SLOW_RUNS)):
        cold = {**os.environ, "CONTRACTFIX_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
        ours = run([contractfix, "fix", "--diff", "--unsafe-fixes", str(tree)], cold, scratch)
        cold = {**os.environ, "CONTRACTFIX_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
        theirs = run([contractfix, "check", str(tree)], cold, scratch)
        pairs.append((ours, theirs, ours / theirs))
    return pairs


def _fixable(tree: Path, scratch: str) -> int:
    env = {**os.environ, "CONTRACTFIX_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
    done = subprocess.run([_contractfix(), "check", "--format", "json", str(tree)], env=env, cwd=scratch,
                          capture_output=True, check=False)
    summary = json.loads(done.stdout)["summary"]
    return summary["fixable"] + summary["unsafe_fixable"]


def mutated(tree: Path, scratch: Path) -> Path:
    """A copy of a vLLM tree with the first violation tests/mutations.py can inject into each model
    file that has a site for one (a dropped key, a dropped `= None`, an extra key)."""
    sys.path.insert(0, str(REPO))
    from contractfix.registry import load_registry
    from contractfix.vllm_names import REGISTRY
    from tests.mutations import mutants

    root = scratch / "mutated"
    shutil.copytree(tree.parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    registered: dict[str, set[str]] = {}
    for entry in load_registry(root / REGISTRY):
        registered.setdefault(entry.module, set()).add(entry.cls)
    changed = 0
    for path in sorted((root / REGISTRY.parent).glob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for kind in ("drop_last_key", "drop_none_default", "add_unsent_key"):
            found = mutants(kind, path.read_bytes(), registered.get(module, set()))
            if found:
                path.write_bytes(found[0].source)
                changed += 1
                break
    print(f"mutated {changed} model files of {tree}", flush=True)
    return root / "vllm"


def _contractfix() -> str:
    return _script("contractfix")


def _script(name: str) -> str:
    """The console script beside this Python, as an install puts it (not a version manager's shim,
    a shell script that costs more than a one-file check), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    return shutil.which(name) or sys.exit(f"{name} is not on PATH: pip install -e '.[bench]'")


def _compile_package() -> str:
    """Write the bytecode of the contractfix package measured, as `pip install` does: an editable
    install under PYTHONDONTWRITEBYTECODE (set on some machines) would otherwise compile every
    module from source on each run, about 55 ms that an installed copy never pays."""
    spec = importlib.util.find_spec("contractfix")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("contractfix is not installed: pip install -e '.[bench]'")
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not compileall.compile_dir(folder, quiet=1):
        sys.exit(f"could not compile {folder}")
    return f"bytecode of {folder} written first, as an install writes it"


def _default_cache() -> Path:
    return Path(os.environ.get("CONTRACTFIX_BENCH_CACHE") or Path.home() / ".cache" / "contractfix")


def sources(version: str, cache: Path) -> Path:
    """<cache>/bench/src/<version>/vllm, unpacked from the pinned wheel (downloaded if missing)."""
    root = cache / "bench" / "src" / version
    if (root / "vllm").is_dir():
        return root / "vllm"
    wheels = cache / "whl" / version
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        wheels.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", f"vllm=={version}", "-d", str(wheels)]
        subprocess.run(command, check=True)
        found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(found[0]) as wheel:
        for member in wheel.namelist():
            if member.startswith("vllm/") and member.endswith(".py"):
                wheel.extract(member, partial)
    partial.rename(root)
    return root / "vllm"


def tasks(tree: Path) -> list[Task]:
    contractfix = [_contractfix()]
    whole, one = str(tree), str(tree.parent / ONE_FILE)
    listed = [
        Task("python start-up (python -c pass)", [sys.executable, "-c", "pass"]),
        Task("contractfix check (cold)", [*contractfix, "check", whole], "cold"),
        Task("contractfix check (warm)", [*contractfix, "check", whole], "warm", "ruff (cached)"),
        Task("contractfix check -j 1 (cold)", [*contractfix, "check", "-j", "1", whole], "cold"),
        Task("contractfix fix --diff (warm)", [*contractfix, "fix", "--diff", whole], "warm", "ruff (cached)"),
        Task("contractfix check one file (cold)", [*contractfix, "check", one], "cold"),
        Task("contractfix check one file (warm)", [*contractfix, "check", one], "warm", "ruff (cached)"),
        Task("libcst no-op codemod", [sys.executable, "-m", "libcst.tool", "codemod", "-u", "--no-format", "--hide-progress", "noop.NOOPCommand", whole], slow=True),
        Task("ruff (no cache)", [_script("ruff"), "check", "--isolated", "--no-cache", "--exit-zero", whole], baseline=""),
        Task("ruff (cached)", [_script("ruff"), "check", "--isolated", "--exit-zero", whole], "warm", baseline=""),
    ]
    if shutil.which("taskset"):
        listed.insert(4, Task("contractfix check (cold, 1 core)", ["taskset", "-c", "0", *contractfix, "check", whole], "cold"))
    return listed


def cold_pairs(tree: Path, runs: int, select: str = "") -> list[tuple[float, float, float]]:
    """(contractfix cold check, ruff F401 without cache, ratio), run pair by pair so that both
    commands of a pair meet the same load on a shared machine. `select`: the rules checked (a
    family's prefix), every rule where empty."""
    contractfix = [_contractfix(), "check", *(("--select", select) if select else ())]
    pairs = []
    with tempfile.TemporaryDirectory(prefix="contractfix-bench-") as scratch:
        for _ in range(runs):
            env = {**os.environ, "CONTRACTFIX_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
            ours = run([*contractfix, str(tree)], env, scratch)
            theirs = run([_script("ruff"), "check", "--no-cache", "--select", "F401", "--exit-zero", str(tree)], env, scratch)
            pairs.append((ours, theirs, ours / theirs))
    return pairs


def measure(listed: list[Task], runs: int) -> list[Result]:
    results: dict[str, Result] = {}
    with tempfile.TemporaryDirectory(prefix="contractfix-bench-") as scratch:
        for task in listed:
            warm = Path(scratch) / f"warm-{len(results)}"
            times: list[float] = []
            for attempt in ("timed",) * min(runs, SLOW_RUNS) if task.slow else ("warm-up", *("timed",) * runs, "sampled"):
                cache = warm if task.cache == "warm" else Path(tempfile.mkdtemp(dir=scratch))
                env = {**os.environ, "CONTRACTFIX_CACHE_DIR": str(cache / "facts"), "RUFF_CACHE_DIR": str(cache / "ruff")}
                if task.slow and not times:
                    start = time.perf_counter()
                    peak = run_sampled(task.argv, env, scratch)
                    times.append(time.perf_counter() - start)
                elif attempt == "sampled":
                    peak = run_sampled(task.argv, env, scratch)
                else:
                    elapsed = run(task.argv, env, scratch)
                    if attempt == "timed":
                        times.append(elapsed)
            median = statistics.median(times)
            results[task.name] = Result(task.name, " ".join(task.argv), times, median, peak, task.baseline)
            print(f"  {task.name}: {median:.3f} s", file=sys.stderr, flush=True)
    for result in results.values():
        if result.baseline:
            result.ratio = result.median / results[result.baseline].median
    return list(results.values())


def run(argv: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    _refuse_failed(argv, done.returncode, done.stderr)
    return elapsed


def _refuse_failed(argv: list[str], status: int, stderr: bytes) -> None:
    """Stop on a command that failed rather than time it: exit 0 or 1 (findings, diffs) is a run,
    anything else, or a traceback (which also exits 1), is not."""
    if status in (0, 1) and b"Traceback (most recent call last)" not in stderr:
        return
    tail = stderr.decode(errors="replace").strip().splitlines()[-5:]
    sys.exit(f"failed (exit {status}): {' '.join(argv)}\n" + "\n".join(tail))


def run_sampled(argv: list[str], env: dict, cwd: str, interval: float = 0.01) -> float:
    """Peak of the summed resident memory of the process and all its descendants, in MB (at least
    the largest single process's peak, which the kernel reports when the process is reaped)."""
    process = psutil.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            try:
                tree = [process, *process.children(recursive=True)]
                peak = max(peak, sum(_rss(p) for p in tree))
            except psutil.Error:
                pass
            time.sleep(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    done.set()
    sampler.join()
    _refuse_failed(argv, os.waitstatus_to_exitcode(status), stderr)
    return max(peak, usage.ru_maxrss * 1024) / 2**20


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:
        return 0


def table(results: list[Result]) -> str:
    rows = [("command", "median s", "min s", "max s", "vs ruff", "peak MB")]
    for r in results:
        ratio = f"{r.ratio:.2f}x" + (" (cached)" if r.baseline == "ruff (cached)" else "") if r.ratio is not None else ""
        rows.append((r.name, f"{r.median:.3f}", f"{min(r.times):.3f}", f"{max(r.times):.3f}", ratio, f"{r.peak_mb:.0f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 1) + (":" if i else "-") for i, w in enumerate(widths)) + "|")
    return "\n".join(lines)


def describe_machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo") if line.startswith("model name")), platform.processor())
    memory = next((int(line.split()[1]) // 1024 for line in _lines("/proc/meminfo") if line.startswith("MemTotal")), 0)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_mb": memory,
        "os": platform.platform(),
        "load_average_at_start": os.getloadavg(),
        "python": platform.python_version(),
        "contractfix": _version(["contractfix", "version"]),
        "commit": _version(["git", "-C", str(Path(__file__).resolve().parents[1]), "rev-parse", "--short", "HEAD"]),
        "libcst": _version([sys.executable, "-c", "import importlib.metadata as m; print(m.version('libcst'))"]),
        "ruff": _version(["ruff", "--version"]),
    }


def _machine_line(machine: dict) -> str:
    return (
        f"{machine['cpu']}, {machine['cores']} cores, {machine['memory_mb'] / 1024:.0f} GiB, {machine['os']}, "
        f"Python {machine['python']}; contractfix {machine['contractfix']} ({machine['commit']}), "
        f"libcst {machine['libcst']}, {machine['ruff']}"
    )


def _version(argv: list[str]) -> str:
    try:
        cwd = Path(__file__).resolve().parents[1]
        return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def _count_py(tree: Path) -> int:
    return sum(1 for _ in tree.rglob("*.py"))


if __name__ == "__main__":
    main()
