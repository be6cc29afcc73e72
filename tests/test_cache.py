"""The content-hash facts cache: used when content is unchanged, never stale."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from contractfix import cache, engine
from contractfix.analysis import analyze_source
from contractfix.cache import FactsCache
from contractfix.config import Options
from tests.conftest import ROOT

STEP3 = ROOT / "tests" / "fixtures" / "PP001" / "step3_style.py"


def test_cache_hit_then_change_is_seen(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    target = tmp_path / "step3.py"
    shutil.copy(STEP3, target)
    first = engine.check([target], Options())
    assert [f.rule for f in first.findings] == ["PP001"]
    entries = list((tmp_path / "cache").rglob("*"))
    assert any(p.is_file() for p in entries), "nothing was cached"
    again = engine.check([target], Options())
    assert again.findings == first.findings
    target.write_text(target.read_text().replace('["hidden_states"]', '["hidden_states", "residual"]'))
    assert engine.check([target], Options()).findings == []


def test_key_depends_on_content_and_module_not_path(tmp_path: Path) -> None:
    cache = FactsCache(tmp_path)
    base = cache.key(b"x = 1\n", "a")
    assert len({base, cache.key(b"x = 2\n", "a"), cache.key(b"x = 1\n", "b")}) == 3
    facts = analyze_source(b"x = 1\n", "/one/a.py", "a")
    cache.put(base, facts)
    moved = cache.get(base, "/two/a.py")
    assert moved.path == "/two/a.py" and moved.module == "a"


def test_unusable_folder_disables_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = FactsCache(blocker / "cache")
    cache.put("ab" * 32, object())
    assert cache.get("ab" * 32, "a.py") is None
    assert cache.folder is None


def test_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    cache = FactsCache(tmp_path)
    key = cache.key(b"", "a")
    (tmp_path / key[:2]).mkdir()
    (tmp_path / key[:2] / key).write_bytes(b"\x80garbage")
    assert cache.get(key, "a.py") is None


def _imported(path: Path, package: Path) -> set[Path]:
    """The modules of `package` that `path` imports with relative imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if not (isinstance(node, ast.ImportFrom) and node.level):
            continue
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        if node.module:
            base = base.joinpath(*node.module.split("."))
            names = [""]
        else:
            names = [alias.name for alias in node.names]
        for name in names:
            target = base / name if name else base
            for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                if candidate.is_file():
                    found.add(candidate.resolve())
    assert all(package in p.parents for p in found)
    return found


def test_fingerprint_covers_every_module_the_facts_depend_on() -> None:
    """Every module the analysis package imports, directly or not, is part of the cache key."""
    package = cache.PACKAGE
    covered = {p.resolve() for p in cache.sources()}
    todo = [p.resolve() for p in (package / "analysis").rglob("*.py")]
    closure: set[Path] = set()
    while todo:
        path = todo.pop()
        if path not in closure:
            closure.add(path)
            todo.extend(_imported(path, package))
    assert package / "facts.py" in closure
    missing = sorted(str(p.relative_to(package)) for p in closure - covered)
    assert not missing, f"add to cache.DEPENDENCIES: {missing}"


@pytest.fixture()
def package_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "codemods"
    for source in cache.sources():
        target = copy / source.relative_to(cache.PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    return copy


def test_changing_any_source_of_the_facts_invalidates_the_cache(package_copy: Path, tmp_path: Path) -> None:
    base = cache.fingerprint(package_copy)
    assert base == cache.FINGERPRINT
    sources = cache.sources(package_copy)
    assert len(sources) > len(cache.DEPENDENCIES) + 3
    before = FactsCache(tmp_path / "facts", base)
    key = before.key(b"x = 1\n", "a")
    before.put(key, analyze_source(b"x = 1\n", "a.py", "a"))
    for path in sources:
        original = path.read_bytes()
        path.write_bytes(original + b"# changed\n")
        after = FactsCache(tmp_path / "facts", cache.fingerprint(package_copy))
        assert after.get(after.key(b"x = 1\n", "a"), "a.py") is None, path.name
        path.write_bytes(original)
    assert cache.fingerprint(package_copy) == base


def test_a_new_analysis_module_invalidates_the_cache(package_copy: Path) -> None:
    base = cache.fingerprint(package_copy)
    (package_copy / "analysis" / "loading.py").write_text('"""New facts."""\n')
    assert cache.fingerprint(package_copy) != base
