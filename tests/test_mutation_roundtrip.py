"""Mutation round-trip on real vLLM model files: inject one violation, `fix`, and require the result
to equal, byte for byte, what `fix` makes of the unmutated file.

Needs a vLLM source tree: the wheel `contractfix smoke --setup` (the README's test set-up) keeps under
<cache>/whl (~/.cache/contractfix by default; 0.33.0 preferred; unpacked here into a temp dir) or an
installed `vllm` package. By default a spread sample of mutants per kind
runs; the long profile (CONTRACTFIX_HYPOTHESIS_PROFILE=long) runs every one. Each kind prints its
restored fraction; below 100% fails for the first three kinds. `delete_delegation` (PP004) runs
with unsafe fixes (delegating to a dynamically built submodule is unsafe) and only reports.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from contractfix import engine
from contractfix.config import Options
from contractfix.registry import REGISTRY, load_registry
from contractfix.smoke.venv import cache_dir
from tests.conftest import MEASUREMENTS
from tests.mutations import KINDS, declares_pp, is_delegation, mutants

pytestmark = pytest.mark.vllm_src

WHEELS = cache_dir() / "whl"
PREFERRED = "0.33.0"
STRICT = ("drop_last_key", "drop_none_default", "add_unsent_key")
SAMPLE = 6
LONG = os.environ.get("CONTRACTFIX_HYPOTHESIS_PROFILE") == "long"
MODEL_DIRS = ("vllm/model_executor/models", "vllm/models")


def _wheel() -> Path | None:
    wheels = sorted(WHEELS.glob("*/vllm-*.whl"), key=lambda w: (w.parent.name != PREFERRED, w.parent.name))
    return wheels[0] if wheels else None


@pytest.fixture(scope="module")
def vllm_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A private copy of vLLM's Python sources and where they came from."""
    root = tmp_path_factory.mktemp("vllm-src")
    wheel = _wheel()
    if wheel is not None:
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith("vllm/") and name.endswith(".py"):
                    archive.extract(name, root)
        return root, wheel.name
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"no vLLM source tree: no wheel under {WHEELS} (`contractfix smoke --setup` fetches one) "
                    "and no installed vllm package")
    package = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(package, root / "vllm", ignore=lambda d, names: [n for n in names if not (n.endswith(".py") or Path(d, n).is_dir())])
    return root, f"installed vllm at {package}"


def _model_files(root: Path) -> list[Path]:
    return sorted(p for d in MODEL_DIRS if (root / d).is_dir() for p in (root / d).rglob("*.py"))


def _tables(root: Path) -> dict[tuple[str, str], set[str]]:
    """The registry tables each (dotted module, class) is registered in."""
    out: dict[tuple[str, str], set[str]] = {}
    for entry in load_registry(root / REGISTRY):
        out.setdefault((entry.module, entry.cls), set()).add(entry.table)
    return out


def _draft(tables: set[str]) -> bool:
    """Registered only as a draft head (never asked for intermediate tensors: no C5 for it)."""
    return bool(tables) and all("SPECULATIVE" in t for t in tables)


def _fixed(path: Path, source: bytes, options: Options) -> tuple[bytes, list, list]:
    """What `fix` writes for `path` holding `source`, its errors and findings; the file is restored."""
    original = path.read_bytes()
    path.write_bytes(source)
    try:
        report = engine.fix([path], options)
        return path.read_bytes(), report.errors, report.findings
    finally:
        path.write_bytes(original)


def _spread(items: list, count: int) -> list:
    if LONG or len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def _cause(why: str) -> str:
    """A reason stripped of its particulars (names, line numbers), to count alike ones."""
    return re.sub(r"`[^`]*`", "`...`", re.sub(r"\b\d+\b", "N", why))


def _why_not(after: bytes, baseline: bytes, errors: list, findings: list) -> str:
    if errors:
        return "error: " + "; ".join(e.message for e in errors)
    code = [line for line in after.splitlines() if line.strip()]
    expected = [line for line in baseline.splitlines() if line.strip()]
    if code == expected:
        return "same code, blank lines differ"
    if sorted(code) == sorted(expected):
        return "same lines, the delegation placed elsewhere"
    ours, theirs = _delegations(after), _delegations(baseline)
    if ours[0] == theirs[0] and ours[1] and ours[1] != theirs[1]:
        placed = "" if ours[2] == theirs[2] else ", elsewhere"
        return f"delegates to `{', '.join(sorted(ours[1] - theirs[1]))}` where vLLM wrote `{', '.join(sorted(theirs[1] - ours[1]))}`{placed}"
    if not findings:
        return "no finding"
    unfixed = [f"{f.rule} {f.message.partition('not auto-fixable: ')[2] or 'no fix'}" for f in findings if not f.fix]
    return "; ".join(unfixed) or "fixed differently"


def _delegations(source: bytes) -> tuple[str, set[str], list[int]]:
    """The module without its delegation statements, their targets, and the index of each among
    its siblings (to tell a different target from a different place)."""
    tree = ast.parse(source)
    targets, places = set(), []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            kept = []
            for index, stmt in enumerate(block):
                if is_delegation(stmt):
                    targets.add(ast.unparse(stmt.value.value))
                    places.append(index)
                else:
                    kept.append(stmt)
            setattr(node, field, kept)
    return ast.dump(tree), targets, places


@pytest.mark.parametrize("kind", list(KINDS))
def test_fix_of_mutant_equals_fix_of_original(kind: str, vllm_tree) -> None:
    root, origin = vllm_tree
    tables = _tables(root)
    options = Options(unsafe_fixes=kind not in STRICT)
    cases = []
    files = _model_files(root)
    pp = declares_pp([p.read_bytes() for p in files]) if kind == "delete_delegation" else set()
    for path in files:
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        registered = {
            cls for (mod, cls), t in tables.items()
            if mod == module and (kind != "delete_delegation" or not _draft(t) and cls in pp)
        }
        cases += [(path, module, m) for m in mutants(kind, path.read_bytes(), registered)]
    assert cases, f"no site for {kind} in {origin}"
    sample = _spread(cases, SAMPLE)
    baseline: dict[Path, bytes] = {}
    failures = []
    for path, _module, mutant in sample:
        if path not in baseline:
            baseline[path], errors, _ = _fixed(path, path.read_bytes(), options)
            assert errors == [], errors
        after, errors, findings = _fixed(path, mutant.source, options)
        compile(after, str(path), "exec")
        if after != baseline[path] or errors:
            site = f"{path.relative_to(root)}:{mutant.line}"
            failures.append(f"{site}: {_why_not(after, baseline[path], errors, findings)}")
    report(kind, origin, len(cases), len(sample), failures)
    if kind in STRICT:
        assert not failures, f"{kind}: not restored:\n" + "\n".join(failures)


def report(kind: str, origin: str, sites: int, tried: int, failures: list[str]) -> None:
    """Record the restored fraction and, per cause, the mutants not restored, for the run's
    "measurements" section (shown even without -s, apart from the test results)."""
    restored = tried - len(failures)
    lines = [f"mutation round-trip {kind} on {origin}: {restored}/{tried} restored ({restored / tried:.0%}), {sites} sites"]
    causes = Counter(_cause(f.partition(": ")[2]) for f in failures)
    lines += [f"  {count} x {cause}" for cause, count in causes.most_common()]
    lines += [f"  not restored: {f}" for f in failures]
    MEASUREMENTS.extend(lines)
