"""The kept output of a check (`results`): reused while nothing it was computed from has changed,
and never once something has: a file it read, a file it looked for and did not find, the options,
the files a folder holds. The last test runs a check of every fixture tree and asserts that each
file and folder it touched is among those it recorded (`inputs`)."""

from __future__ import annotations

import builtins
import io
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

from contractfix import cliutil, engine, inputs, results
from contractfix.config import Options, load
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
CROSS_FILE = FIXTURES / "PP001" / "cross_file"
DERIVED = Path("vllm/model_executor/models/derived_lm.py")
BASE = Path("vllm/model_executor/models/base_lm.py")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    """A copy of a tree whose subclass's finding depends on a base in another file, as the
    current folder, with a cache of its own."""
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "work" / "tree"  # a run lists the folder above the import root (for unpacked wheels): not the cache's
    shutil.copytree(CROSS_FILE, copy)
    monkeypatch.chdir(copy)
    return copy


def _check(paths: list[Path], options: Options | None = None, fmt: str = "text") -> tuple[str, int]:
    return cliutil.rendered_check(paths, options or Options(), fmt, False, False, False)


def _reused(monkeypatch, paths: list[Path], options: Options | None = None, fmt: str = "text") -> tuple[str, int]:
    """The check's output, which must come from the results cache (the engine would raise)."""
    def unexpected(*args, **kwargs):
        raise AssertionError("the check ran again")

    with monkeypatch.context() as patch:
        patch.setattr(engine, "check", unexpected)
        return _check(paths, options, fmt)


def test_an_unchanged_check_is_reused_with_its_exit_code(tree: Path, monkeypatch) -> None:
    first = _check([DERIVED])
    assert "PP001" in first[0] and first[1] == cliutil.EXIT_FINDINGS
    assert _reused(monkeypatch, [DERIVED]) == first
    assert list((tree.parent.parent / "cache" / "results").iterdir())


def test_an_output_read_from_a_file_changed_just_before_is_not_kept(tree: Path, monkeypatch) -> None:
    """Where a file system keeps whole seconds, an edit made in the same second as a check leaves
    the stamp the check saw: what a check read from a file changed within `SETTLED_NS` before it
    began is not kept: the next run checks again."""
    monkeypatch.setattr(inputs, "SETTLED_NS", 3600 * 10**9)  # every file of the copy: changed "just now"
    first = _check([DERIVED])
    assert not list((tree.parent.parent / "cache" / "results").glob("*"))
    monkeypatch.setattr(inputs, "SETTLED_NS", 0)
    assert _check([DERIVED]) == first
    assert _reused(monkeypatch, [DERIVED]) == first


def test_each_format_and_verbosity_is_kept_on_its_own(tree: Path, monkeypatch) -> None:
    text, as_json = _check([DERIVED]), _check([DERIVED], fmt="json")
    assert text[0] != as_json[0]
    assert _reused(monkeypatch, [DERIVED], fmt="json") == as_json
    assert _reused(monkeypatch, [DERIVED]) == text


def test_a_base_edited_in_another_file_is_seen(tree: Path) -> None:
    assert "PP001" in _check([DERIVED])[0]
    base = tree / BASE
    base.write_text(base.read_text().replace('["hidden_states"]', '["hidden_states", "residual"]'))
    out, code = _check([DERIVED])
    assert "PP001" not in out and code == cliutil.EXIT_OK


def test_a_module_looked_for_and_not_found_is_seen_once_it_is_there(tree: Path) -> None:
    base = tree / BASE
    text = base.read_text()
    base.unlink()
    assert "PP001" not in _check([DERIVED])[0]
    base.write_text(text)
    assert "PP001" in _check([DERIVED])[0]


def test_other_options_are_another_entry(tree: Path) -> None:
    assert "PP001" in _check([DERIVED])[0]
    (tree / "pyproject.toml").write_text('[tool.contractfix]\nignore = ["PP001"]\n')
    out, code = _check([DERIVED], load(DERIVED))
    assert "PP001" not in out and code == cliutil.EXIT_OK


def test_a_file_added_to_a_checked_folder_is_checked(tree: Path) -> None:
    before = _check([Path("vllm")])[0]
    (tree / "vllm" / "model_executor" / "models" / "again.py").write_text(
        (tree / DERIVED).read_text().replace("DerivedLMModel", "AgainLMModel")
    )
    after = _check([Path("vllm")])[0]
    assert "AgainLMModel" in after and "AgainLMModel" not in before


def test_no_cache_and_sarif_never_reuse(tree: Path, monkeypatch) -> None:
    _check([DERIVED], fmt="sarif")
    _check([DERIVED], Options(cache=False))
    assert not (tree.parent.parent / "cache" / "results").exists()


def test_an_entry_that_cannot_be_read_is_a_miss(tree: Path, monkeypatch) -> None:
    first = _check([DERIVED])
    for kept in (tree.parent.parent / "cache" / "results").iterdir():
        kept.write_bytes(b"not a pickle")
    assert _check([DERIVED]) == first


def test_a_fifo_or_a_link_planted_as_an_entry_is_a_miss_that_never_blocks(tree: Path, tmp_path: Path) -> None:
    first = _check([DERIVED])
    kept = next((tree.parent.parent / "cache" / "results").iterdir())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(kept.read_bytes())
    kept.unlink()
    kept.symlink_to(elsewhere)
    assert _check([DERIVED]) == first
    assert not kept.is_symlink(), "the entry written again replaces the link, not what it leads to"
    kept.unlink()
    os.mkfifo(kept)
    outcome: list[tuple[str, int]] = []
    worker = threading.Thread(target=lambda: outcome.append(_check([DERIVED])), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the run blocked on a FIFO in the results cache"
    assert outcome == [first]


def test_a_results_folder_planted_as_a_link_is_never_written_through(tree: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tree.parent.parent / "cache").mkdir()
    (tree.parent.parent / "cache" / "results").symlink_to(elsewhere, target_is_directory=True)
    assert "PP001" in _check([DERIVED])[0]
    assert list(elsewhere.iterdir()) == []


def test_the_oldest_entries_go_past_the_bound(tree: Path, monkeypatch) -> None:
    monkeypatch.setattr(results, "KEPT", 2)
    for fmt in ("text", "full", "json"):
        _check([DERIVED], fmt=fmt)
    assert len(list((tree.parent.parent / "cache" / "results").iterdir())) == 2


def _trees() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*") if p.is_dir() and p.name != "__pycache__")


class _Touched:
    """Every path the run stats, opens or lists, outside a link's resolution (a run resolves
    the folders above each file it reads) and outside `inputs` itself."""

    def __init__(self) -> None:
        self.paths: set[str] = set()

    def spy(self, real):
        def call(path, *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)) and not self._resolving():
                self.paths.add(os.path.abspath(os.fsdecode(path)))
            return real(path, *args, **kwargs)

        return call

    @staticmethod
    def _resolving() -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name in ("realpath", "_joinrealpath", "resolve") or frame.f_code.co_filename == inputs.__file__:
                return True
            frame = frame.f_back
        return False


def test_what_the_rules_child_reads_is_handed_back(tmp_path: Path, monkeypatch) -> None:
    """The rules that do not trace run in a forked child beside this process (`engine._check`):
    the child hands back what it recorded, and a run with the child records what one without
    records."""
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    tree = FIXTURES / "PM002" / "inherited_loader"
    handed: list[dict] = []
    merge = inputs.merge
    monkeypatch.setattr(inputs, "merge", lambda stamps: handed.append(stamps) or merge(stamps))
    recorded = []
    for jobs, shared in ((1, engine.SHARED_TARGETS), (2, 1)):
        monkeypatch.setattr(engine, "SHARED_TARGETS", shared)
        with inputs.recorded() as seen:
            engine.check([tree], Options(jobs=jobs))
        recorded.append({p for p in seen.stamps if p.startswith(str(tree))})
    child = {p for p in handed[0] if p.startswith(str(tree))} if len(handed) == 1 else set()
    assert child and child <= recorded[1]
    assert recorded[0] and recorded[1] == recorded[0]


def test_every_file_a_check_touches_is_recorded(tmp_path: Path, monkeypatch) -> None:
    """The guard of `inputs`: a reader or a test of existence that records nothing would let a
    later run reuse an output that no longer holds. Each fixture tree is checked whole and by
    each of its files, cold."""
    jobs = 1
    cache = tmp_path / "cache"
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(cache))
    skipped = (str(cache), str(results.PACKAGE), sys.prefix, sys.base_prefix, "/dev/")
    missed: dict[str, list[str]] = {}
    for source in _trees():
        tree = tmp_path / source.relative_to(FIXTURES)
        shutil.copytree(source, tree)
        monkeypatch.chdir(tree)
        for paths in [[Path(".")], *([p.relative_to(tree)] for p in sorted(tree.rglob("*.py")))]:
            options = load(paths[0], jobs=jobs)
            from contractfix.discover import discover

            found = discover(paths, options.exclude)
            touched = _Touched()
            with monkeypatch.context() as patch:
                for module, name in [(os, "stat"), (os, "lstat"), (os, "open"), (os, "scandir"), (os, "listdir"),
                                     (io, "open"), (builtins, "open")]:
                    patch.setattr(module, name, touched.spy(getattr(module, name)))
                with inputs.recorded(skipped=(cache, results.PACKAGE)) as seen:
                    engine.check(paths, options, found)
            left = sorted(p for p in touched.paths - set(seen.stamps) if not p.startswith(skipped))
            if left:
                missed[f"{source.relative_to(FIXTURES)} {paths[0]}"] = [os.path.relpath(p, tree) for p in left]
    assert missed == {}, "read but not recorded"
