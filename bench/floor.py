"""Where a cold check's time goes past the parser (run by hand): two stripped-down runs timed pair
by pair against the real cold check and `ruff check --no-cache --select F401`.

    python bench/floor.py                      # vLLM 0.33.0, 7 rounds
    python bench/floor.py --versions 0.21.0 0.33.0 --runs 5

Both stripped runs start the interpreter, read every file of the tree, keep those `relevant`
keeps, and hand them in batches of 8 to as many forked workers as a cold check starts (two on a
two-core machine). Then:
- `parse`: each worker parses the classes a need asks for (`analysis.needs`), the classes a cold
  check cannot do without, and nothing else. Where they are found is worked out before the timing.
- `analyze`: each worker runs `analyze_source`, as a cold check's workers do, and sends nothing
  back: no facts cache, no resolution, no rules.
`parse` is the floor of any design built on CPython's parser that reads what the rules read;
`analyze` is what the workers' analysis costs on top, and the cold check what the rest of the
run adds. Sources come from `bench.py`'s cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

BATCH = 8
RUFF = "ruff check --no-cache --select F401"
SPANS: dict[str, list[list[int]]] = {}
"""In the timed run: the `parse` stage's spans, loaded before the workers fork (they inherit it)."""


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(*sys.argv[2:])
        return
    from bench import _compile_package, _default_cache, run, sources  # bench/ is sys.path[0]

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", default=["0.33.0"])
    parser.add_argument("--runs", type=int, default=7, help="rounds of the four commands")
    parser.add_argument("--cache", type=Path, default=_default_cache(), help="where bench.py keeps sources")
    args = parser.parse_args()
    print(_compile_package(), flush=True)
    contractfix = shutil.which("contractfix") or sys.exit("contractfix is not on PATH: pip install -e '.[bench]'")
    for version in args.versions:
        tree = sources(version, args.cache)
        with tempfile.TemporaryDirectory(prefix="contractfix-floor-") as scratch:
            spans = Path(scratch) / "spans.json"
            spans.write_text(json.dumps(_needed_spans(tree)), "utf-8")
            me = [sys.executable, os.path.abspath(__file__), "--child"]
            commands = {
                RUFF: ["ruff", "check", "--no-cache", "--select", "F401", "--exit-zero", str(tree)],
                "parse (floor)": [*me, "parse", str(spans), str(tree)],
                "analyze (workers only)": [*me, "analyze", str(spans), str(tree)],
                "contractfix check (cold)": [contractfix, "check", str(tree)],
            }
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.runs):
                for name, argv in commands.items():
                    env = {**os.environ, "CONTRACTFIX_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
                    times[name].append(run(argv, env, scratch))
        ruff = statistics.median(times[RUFF])
        print(f"\n== vLLM {version}: {tree}, medians of {args.runs}, load average {os.getloadavg()[0]:.1f}")
        for name, measured in times.items():
            median = statistics.median(measured)
            print(f"  {name:36s} {median:6.3f} s  {median / ruff:5.2f}x ruff")


def _needed_spans(tree: Path) -> dict[str, list[tuple[int, int]]]:
    """Per file that can take part: the lines of each class a need asks for."""
    from contractfix.analysis import needs
    from contractfix.analysis.module import _decoded
    from contractfix.analysis.outline import Unplaceable, outline
    from contractfix.discover import read_source

    markers = needs.markers()
    found = {}
    for path in sorted(tree.rglob("*.py")):
        data = read_source(path)
        if data is None:
            continue
        text = _decoded(data)
        rows = text.split("\n")
        try:
            statements = outline(text)
        except Unplaceable:  # a cold check parses such a file whole
            found[str(path)] = [(1, len(rows))]
            continue
        found[str(path)] = [
            (s.start, s.end) for s in statements
            if s.kind == "class" and any(m in "\n".join(rows[s.start - 1 : s.end]) for m in markers)
        ]
    return found


def _child(stage: str, spans_file: str, tree: str) -> None:
    """The timed run: read and keep as a cold check does, then `stage` in forked workers."""
    from concurrent.futures import ProcessPoolExecutor

    from contractfix.discover import relevant
    from contractfix.workers import pool_size  # with it the analysis, before the fork, as in a cold check

    SPANS.update(json.loads(Path(spans_file).read_text("utf-8")))
    kept: list[tuple[str, bytes]] = []
    with ProcessPoolExecutor(pool_size(0, len(SPANS) or 1)) as pool:
        batches = []
        for folder, _, files in os.walk(tree):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    data = handle.read()
                if relevant(data):
                    kept.append((path, data))
                    if len(kept) % BATCH == 0:
                        batches.append(pool.submit(_work, stage, kept[-BATCH:]))
        batches.append(pool.submit(_work, stage, kept[len(kept) - len(kept) % BATCH :]))
        for batch in batches:
            batch.result()


def _work(stage: str, files: list[tuple[str, bytes]]) -> None:
    if stage == "analyze":
        from contractfix.analysis import analyze_source  # imported before the fork (`_child`)

        for path, data in files:
            analyze_source(data, path, "vllm.model")
        return
    import ast

    for path, data in files:
        rows = data.decode("utf-8", errors="replace").split("\n")
        for start, end in SPANS.get(path, ()):
            ast.parse("\n" * (start - 1) + "\n".join(rows[start - 1 : end]), filename=path)


if __name__ == "__main__":
    main()
