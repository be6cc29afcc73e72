"""The content-hash facts cache: used when content is unchanged, never stale."""

from __future__ import annotations

import shutil
from pathlib import Path

from contractfix import engine
from contractfix.analyze import analyze_source
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
