"""docs/benchmark.md, written from the JSON document `bench.py` saves: the page holds no figure
that a run did not measure, and says which commit, machine and load measured it.

    python bench/page.py docs/benchmark.json docs/benchmark.md   # re-render a saved run

`tests/test_bench_page.py` renders the committed JSON and compares it with the committed page, so
a hand-edited figure fails the suite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HOW = """\
`python3 bench/bench.py --page docs` measures and writes this page and `docs/benchmark.json`
(`pip install -e '.[bench]'`; vLLM's wheels are fetched into a cache outside the repository). Each
pair of commands runs back to back, so both meet the same load on a shared machine: compare the
ratios, which move less than the seconds. Nothing on this page is edited by hand."""


def render(document: dict) -> str:
    machine = document["machine"]
    figures = document["figures"]
    load = document.get("load_average_at_end", [0.0])[0]
    lines = [
        "# Benchmark",
        "",
        HOW,
        "",
        f"Measured at commit `{machine['commit']}` on {machine['cpu']} ({machine['cores']} cores, "
        f"{machine['memory_mb'] / 1024:.0f} GiB), {machine['os']}, Python {machine['python']}, libcst "
        f"{machine['libcst']}, {machine['ruff']}; load average {machine['load_average_at_start'][0]:.1f} at the "
        f"start and {load:.1f} at the end; medians of {document['runs_per_command']} pairs.",
        "",
        *_figures(figures),
    ]
    for version, run in document.get("results", {}).items():
        if run.get("results"):
            lines += ["", f"**Every command on vLLM {version}** (medians; warm: the facts cache filled first)", ""]
            lines += [_table(run["results"])]
    return "\n".join(lines) + "\n"


def _figures(figures: dict) -> list[str]:
    out = ["## The four figures, each beside its reference", ""]
    cold = figures.get("cold_check_vs_ruff", {})
    if cold:
        out += ["**Whole tree, cold** (`contractfix check` with an empty facts cache, against "
                "`ruff check --no-cache --select F401`):", "",
                "| tree | contractfix | ruff | ratio |", "|---|---:|---:|---:|"]
        out += [f"| vLLM {v} ({f['files']} files) | {f['ours']:.2f} s | {f['reference']:.2f} s | {f['ratio']:.2f}x |"
                for v, f in cold.items()]
        out.append("")
        alone = {v: f["families"] for v, f in cold.items() if f.get("families")}
        if alone:
            prefixes = list(dict.fromkeys(p for families in alone.values() for p in families))
            out += ["Each family of rules alone (`contractfix check --select <prefix>`, each run beside its own ruff "
                    "run; seconds, and the ratio to ruff):", "",
                    "| tree | " + " | ".join(prefixes) + " | every family |", "|---|" + "---:|" * (len(prefixes) + 1)]
            out += [f"| vLLM {v} | " + " | ".join(_cell(families.get(p)) for p in prefixes) + f" | {_cell(cold[v])} |"
                    for v, families in alone.items()]
            out.append("")
    one = figures.get("one_file_vs_python")
    if one:
        out += [f"**One file, warm** (the pre-commit case: `contractfix check {one['file']}`, interpreter start-up "
                "included, against `python -c pass`; goal: at most "
                f"{one['goal_s']} s and {one['goal_ratio']:.0f}x):", "",
                "| file | contractfix | python -c pass | ratio |", "|---|---:|---:|---:|",
                f"| unchanged (the kept output) | {one['ours']:.3f} s | {one['reference']:.3f} s | {one['ratio']:.2f}x |"]
        edited = one.get("edited")
        if edited:
            out.append(f"| a line added before each run (its facts read again, the rules run) | {edited['ours']:.3f} s "
                       f"| {edited['reference']:.3f} s | {edited['ratio']:.2f}x |")
        out.append("")
    fix = figures.get("fix_vs_check", {})
    if fix:
        out += ["**Fix against check, whole tree** (`contractfix fix --diff --unsafe-fixes` against `contractfix "
                "check`, each with an empty facts cache; goal: at most 2x):", "",
                "| tree | fixes | check | fix | ratio |", "|---|---:|---:|---:|---:|"]
        out += [f"| {label} | {f['fixes']} | {f['reference']:.2f} s | {f['ours']:.2f} s | {f['ratio']:.2f}x |"
                for label, f in fix.items()]
        out.append("")
    growth = figures.get("fix_growth", {})
    if growth:
        out += ["**Growth in one file** (CPU seconds of `fix --diff` and of `check` on generated files; the "
                "exponent is the slope of log time against log size: 1 is linear):", "",
                "| grows with | sizes | fix s | check s | fix exponent | check exponent |",
                "|---|---|---|---|---:|---:|"]
        for what, g in growth.items():
            sizes = ", ".join(str(s) for s in g["sizes"])
            out.append(f"| {what} | {sizes} | {_seconds(g['fix'])} | {_seconds(g['check'])} | "
                       f"{g['fix_exponent']:.2f} | {g['check_exponent']:.2f} |")
        out.append("")
    return out


def _cell(figure: dict | None) -> str:
    return "" if figure is None else f"{figure['ours']:.2f} s ({figure['ratio']:.2f}x)"


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _table(results: list[dict]) -> str:
    rows = [("command", "median s", "min s", "max s", "ratio", "peak MB")]
    for r in results:
        ratio = "" if r.get("ratio") is None else f"{r['ratio']:.2f}x vs {r['baseline']}"
        rows.append((r["name"], f"{r['median']:.3f}", f"{min(r['times']):.3f}", f"{max(r['times']):.3f}", ratio,
                     f"{r['peak_mb']:.0f}"))
    head = "| " + " | ".join(rows[0]) + " |"
    rule = "|---|" + "---:|" * (len(rows[0]) - 1)
    return "\n".join([head, rule, *("| " + " | ".join(row) + " |" for row in rows[1:])])


def main() -> None:
    source, target = map(Path, sys.argv[1:3])
    target.write_text(render(json.loads(source.read_text("utf-8"))), "utf-8")


if __name__ == "__main__":
    main()
