"""Mutation round-trip on real vLLM model files: inject one violation, `fix`, and require the result
to equal, byte for byte, what `fix` makes of the unmutated file.

Needs a vLLM source tree: a cached wheel under ~/.cache/contractfix/whl (0.33.0 preferred; unpacked
here into a temp dir) or an installed `vllm` package. By default a spread sample of mutants per kind
runs; the long profile (CONTRACTFIX_HYPOTHESIS_PROFILE=long) runs every one. Each kind prints its
restored fraction; below 100% fails for the first three kinds. `delete_delegation` (PP004) runs
with unsafe fixes (delegating to a dynamically built submodule is unsafe) and only reports.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from codemods import engine
from codemods.config import Options
from codemods.registry import REGISTRY, load_registry
from tests.mutations import KINDS, mutants

pytestmark = pytest.mark.vllm_src

WHEELS = Path.home() / ".cache" / "contractfix" / "whl"
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
        pytest.skip(f"no vLLM source tree: no wheel under {WHEELS} and no installed vllm package")
    package = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(package, root / "vllm", ignore=lambda d, names: [n for n in names if not (n.endswith(".py") or Path(d, n).is_dir())])
    return root, f"installed vllm at {package}"


@pytest.fixture(scope="module")
def facts_cache(tmp_path_factory: pytest.TempPathFactory):
    old = os.environ.get("CONTRACTFIX_CACHE_DIR")
    os.environ["CONTRACTFIX_CACHE_DIR"] = str(tmp_path_factory.mktemp("facts-cache"))
    yield
    if old is None:
        del os.environ["CONTRACTFIX_CACHE_DIR"]
    else:
        os.environ["CONTRACTFIX_CACHE_DIR"] = old


def _model_files(root: Path) -> list[Path]:
    return sorted(p for d in MODEL_DIRS if (root / d).is_dir() for p in (root / d).rglob("*.py"))


def _registered(root: Path) -> dict[str, set[str]]:
    """Registered class names per dotted module."""
    out: dict[str, set[str]] = {}
    for entry in load_registry(root / REGISTRY):
        out.setdefault(entry.module, set()).add(entry.cls)
    return out


def _fixed(path: Path, source: bytes, options: Options) -> tuple[bytes, list]:
    """What `fix` writes for `path` holding `source`; the file is restored afterwards."""
    original = path.read_bytes()
    path.write_bytes(source)
    try:
        report = engine.fix([path], options)
        return path.read_bytes(), report.errors
    finally:
        path.write_bytes(original)


def _spread(items: list, count: int) -> list:
    if LONG or len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


@pytest.mark.parametrize("kind", list(KINDS))
def test_fix_of_mutant_equals_fix_of_original(kind: str, vllm_tree, facts_cache, capsys) -> None:
    root, origin = vllm_tree
    registered = _registered(root)
    options = Options(unsafe_fixes=kind not in STRICT)
    cases = []
    for path in _model_files(root):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        cases += [(path, m) for m in mutants(kind, path.read_bytes(), registered.get(module, set()))]
    assert cases, f"no site for {kind} in {origin}"
    sample = _spread(cases, SAMPLE)
    baseline: dict[Path, bytes] = {}
    failures = []
    for path, mutant in sample:
        if path not in baseline:
            baseline[path], errors = _fixed(path, path.read_bytes(), options)
            assert errors == [], errors
        after, errors = _fixed(path, mutant.source, options)
        compile(after, str(path), "exec")
        if after != baseline[path] or errors:
            failures.append(f"{path.relative_to(root)}:{mutant.line} {[e.message for e in errors]}")
    restored = len(sample) - len(failures)
    with capsys.disabled():
        print(f"\nmutation round-trip {kind} on {origin}: {restored}/{len(sample)} restored "
              f"({restored / len(sample):.0%}; {len(cases)} sites){''.join(chr(10) + '  not restored: ' + f for f in failures)}")
    if kind in STRICT:
        assert not failures, f"{kind}: not restored:\n" + "\n".join(failures)
