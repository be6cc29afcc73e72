"""docs/benchmark.md is what bench/page.py renders from the run saved in docs/benchmark.json (no
figure edited by hand), and the generated files bench/generated.py times grow as it says."""

from __future__ import annotations

import json
from pathlib import Path

from contractfix import engine
from contractfix.config import Options
from contractfix.families import FAMILIES

from .conftest import ROOT, bench_module


def test_the_benchmark_page_is_rendered_from_the_saved_run() -> None:
    page = bench_module("page")
    document = json.loads((ROOT / "docs" / "benchmark.json").read_text("utf-8"))
    rendered = page.render(document)
    assert (ROOT / "docs" / "benchmark.md").read_text("utf-8") == rendered, (
        "docs/benchmark.md differs from its run: `python3 bench/bench.py --page docs` (or bench/page.py) writes it"
    )
    machine = document["machine"]
    assert machine["commit"] in rendered and machine["cpu"] in rendered and "load average" in rendered
    assert set(document["figures"]) == {"cold_check_vs_ruff", "one_file_vs_python", "fix_vs_check", "fix_growth"}
    families = {family.prefix for family in FAMILIES}
    assert all(set(cold["families"]) == families for cold in document["figures"]["cold_check_vs_ruff"].values())


def test_the_generated_files_hold_the_fixes_they_say(tmp_path: Path) -> None:
    generated = bench_module("generated")
    many, long = tmp_path / "many.py", tmp_path / "long.py"
    many.write_text(generated.classes(7))
    long.write_text(generated.lines(600))
    report = engine.check([many, long], Options())
    assert [(f.path.name, f.rule) for f in report.findings if f.fix] == [("long.py", "PP001")] + [("many.py", "PP001")] * 7
    assert 600 <= long.read_text().count("\n") < 650  # whole classes: up to one past the size asked


def test_the_fitted_exponent_is_the_slope_of_the_log_log_line() -> None:
    generated = bench_module("generated")
    sizes = [10, 20, 40, 80]
    assert abs(generated.exponent(sizes, [0.5 * s for s in sizes]) - 1.0) < 1e-9
    assert abs(generated.exponent(sizes, [0.01 * s * s for s in sizes]) - 2.0) < 1e-9
