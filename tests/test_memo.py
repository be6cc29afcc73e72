"""The stat-keyed memo of what a run reads from files it does not analyze (the registry, the class
headers of registered modules): reused while a file is unchanged, recomputed once it changes, and
never written through a planted link."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from contractfix import cachedir, engine, inputs, memo
from contractfix.config import Options
from contractfix.findings import Report
from contractfix.memo import Memo
from tests.conftest import ROOT


def _words(data: bytes) -> frozenset[bytes]:
    return frozenset(data.split())


def test_a_stored_value_is_reused_until_the_file_changes(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_bytes(b"class A(Base): pass\n")
    reads: list[Path] = []

    def read(path: Path) -> bytes:
        reads.append(path)
        return path.read_bytes()

    first = Memo(tmp_path / "cache", "words", __file__)
    assert first.get(source, _words, read) == {b"class", b"A(Base):", b"pass"}
    first.flush()
    again = Memo(tmp_path / "cache", "words", __file__)
    assert again.get(source, _words, read) == {b"class", b"A(Base):", b"pass"}
    assert reads == [source], "a warm run read the file again"
    source.write_bytes(b"class A(Other): pass\n")
    os.utime(source, ns=(0, 0))  # a change the mtime alone would miss: the size and ctime still tell
    assert b"A(Other):" in again.get(source, _words, read)
    assert len(reads) == 2


def test_another_computation_never_reads_the_old_values(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_bytes(b"x y\n")
    memo = Memo(tmp_path / "cache", "words", __file__)
    memo.get(source, _words, Path.read_bytes)
    memo.flush()
    other = tmp_path / "computer.py"
    other.write_text("# another version of the module that computes the values\n")
    changed = Memo(tmp_path / "cache", "words", str(other))
    assert changed.get(source, lambda data: frozenset({b"new"}), Path.read_bytes) == {b"new"}


def test_a_planted_link_is_never_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "precious"
    elsewhere.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "memo").symlink_to(elsewhere, target_is_directory=True)
    source = tmp_path / "m.py"
    source.write_bytes(b"x\n")
    memo = Memo(cache, "words", __file__)
    assert memo.get(source, _words, Path.read_bytes) == {b"x"}
    memo.flush()
    assert list(elsewhere.iterdir()) == []


def test_no_cache_folder_keeps_values_for_the_run(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_bytes(b"x\n")
    memo = Memo(None, "words", __file__)
    assert memo.get(source, _words, Path.read_bytes) == {b"x"}
    memo.flush()
    assert list(tmp_path.iterdir()) == [source]


def _registered_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "tests" / "fixtures" / "PP002" / "registered", tree)
    return tree / "vllm" / "model_executor" / "models"


def test_one_file_check_sees_a_subclass_in_another_module_change(tmp_path: Path, monkeypatch) -> None:
    """Checking a base alone reads the registered modules' class headers (memoized): a registered
    subclass elsewhere makes its forward an entry forward, and the verdict follows that module's edits."""
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    models = _registered_tree(tmp_path)
    base = models / "demo_base.py"
    for _ in range(2):
        assert [f.rule for f in engine.check([base], Options()).findings] == ["PP002"]
    assert list((tmp_path / "cache" / "memo").iterdir()), "nothing was memoized"
    child = models / "demo_child.py"
    child.write_text(child.read_text().replace("class DemoChildModel(DemoBase):", "class DemoChildModel(Other):"))
    assert engine.check([base], Options()).findings == []


def _touched(path: Path) -> None:
    """A new stamp, the same bytes: the facts cache still answers, a kept check output does not."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))


def test_a_warm_one_file_check_imports_only_what_checking_needs(tmp_path: Path) -> None:
    """The pre-commit case: a second check of one file parses nothing and loads no libcst, git,
    smoke, fix, plugin or worker-pool code; a third, of a file unchanged since, reuses the
    second's output and imports neither the engine nor the facts (`results`)."""
    script = (
        "import json, sys\n"
        "from contractfix import cli\n"
        "sys.argv = ['contractfix', 'check', '--quiet', sys.argv[1]]\n"
        "try:\n"
        "    with cli._only_the_command(['check']):\n"
        "        cli.app(prog_name='contractfix')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    env = dict(os.environ, CONTRACTFIX_CACHE_DIR=str(tmp_path / "cache"))
    target = _registered_tree(tmp_path / "work") / "demo_base.py"  # the cache outside the folders a run lists
    runs = []
    for touch in (False, True, False):
        if touch:
            _touched(target)
            time.sleep(2.2)  # past the 2 s of `inputs.SETTLED_NS` the runs keep: a settled file's output is kept
        runs.append(subprocess.run([sys.executable, "-c", script, str(target)], env=env, capture_output=True, text=True))
    assert "PP002" in runs[1].stdout, runs[1].stdout + runs[1].stderr
    loaded = set(json.loads(runs[1].stderr.splitlines()[-1]))
    unwanted = {"libcst", "git", "contractfix.smoke", "contractfix.apply", "contractfix.analysis.module",
                "concurrent.futures", "contractfix.plugins", "contractfix.sweep", "contractfix.gitops",
                "contractfix.rewriting"}
    assert "contractfix.engine" in loaded, "the check did not run"
    assert sorted(unwanted & loaded) == []
    assert runs[2].stdout == runs[1].stdout
    reused = set(json.loads(runs[2].stderr.splitlines()[-1]))
    assert sorted(m for m in reused if m.startswith(("contractfix.engine", "contractfix.facts", "contractfix.rules",
                                                     "contractfix.families", "contractfix.analysis"))) == []


def test_a_warm_one_file_check_given_a_relative_path_reads_no_unrelated_file(tmp_path: Path) -> None:
    """PP008 reads the release's quantization methods for a KV-cache-scale branch; a model of the
    release itself, named by a path relative to the tree, must not make it read the whole tree."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "tests" / "fixtures" / "PP008" / "scale_never_named", tree)
    filler = tree / "vllm" / "filler"
    filler.mkdir()
    for i in range(50):
        (filler / f"f{i:02d}.py").write_text(f"VALUE = {i}\n")
    script = (
        "import json, sys\n"
        "from contractfix import cli\n"
        "opened = []\n"
        "sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == 'open' else None)\n"
        "sys.argv = ['contractfix', 'check', '--select', 'PP008', sys.argv[1]]\n"
        "try:\n"
        "    with cli._only_the_command(['check']):\n"
        "        cli.app(prog_name='contractfix')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(opened), file=sys.stderr)\n"
    )
    env = dict(os.environ, CONTRACTFIX_CACHE_DIR=str(tmp_path / "cache"))
    model = "vllm/model_executor/models/lumen.py"
    runs = [subprocess.run([sys.executable, "-c", script, model], env=env, cwd=tree, capture_output=True, text=True)]
    _touched(tree / model)  # the facts cache answers; the kept output of the first run does not
    runs.append(subprocess.run([sys.executable, "-c", script, model], env=env, cwd=tree, capture_output=True, text=True))
    assert "PP008" in runs[1].stdout, runs[1].stdout + runs[1].stderr
    opened = json.loads(runs[1].stderr.splitlines()[-1])
    assert [p for p in opened if "filler" in p] == []


def test_a_warm_check_of_a_tree_reads_no_file_again_that_cannot_take_part(tmp_path: Path, monkeypatch) -> None:
    """Issue 40: the byte search read every file of a tree on each run (1,478 of vLLM 0.21.0's
    1,781 take no part); its answer is kept by each file's stat, and a file written since is read
    again, and analyzed once it can take part."""
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    models = _registered_tree(tmp_path)
    plain = models / "plain.py"
    plain.write_text("VALUE = 1\n")
    opened: list[str] = []
    real = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(os.path.basename(path)) or real(path, *a, **k))

    def analyzed() -> list[str]:
        opened.clear()
        session = engine.analyze([models], Options(), Report())
        return [Path(m.path).name for m in session.targets]

    assert "plain.py" not in analyzed() and "plain.py" in opened
    assert "plain.py" not in analyzed() and "plain.py" not in opened
    assert "demo_base.py" in opened, "a file that takes part is read for its facts"
    plain.write_text((models / "demo_base.py").read_text().replace("DemoBase", "PlainBase"))
    assert "plain.py" in analyzed() and "plain.py" in opened
    opened.clear()
    engine.analyze([models / "demo_base.py"], Options(), Report())
    assert not [name for name in opened if name.startswith("contract-files")], "one file is read anyway"


def test_an_answer_from_a_file_changed_just_before_is_not_kept(tmp_path: Path, monkeypatch) -> None:
    """A file changed within `inputs.SETTLED_NS` of the lookup could change again in the same
    tick of a coarse clock and keep its stamp: its answer serves this run, and is not written."""
    source = tmp_path / "m.py"
    source.write_bytes(b"class A(Base): pass\n")
    monkeypatch.setattr(inputs, "SETTLED_NS", 3600 * 10**9)
    fresh = Memo(tmp_path / "cache", "words", __file__)
    assert fresh.get(source, _words, Path.read_bytes) == _words(source.read_bytes())
    fresh.flush()
    assert cachedir.load(fresh.file) == {}
    monkeypatch.setattr(inputs, "SETTLED_NS", 0)
    settled = Memo(tmp_path / "cache", "words", __file__)
    settled.get(source, _words, Path.read_bytes)
    settled.flush()
    assert list(cachedir.load(settled.file)) == [str(source)]


def test_a_memo_past_its_bound_keeps_what_the_run_used(tmp_path: Path, monkeypatch) -> None:
    """A sweep checks a worktree at a new path each run: without a bound, the memo of which files
    can take part would grow by a whole tree each time, and be read whole by every run."""
    monkeypatch.setattr(memo, "KEPT", 3)
    files = []
    for i in range(5):
        files.append(tmp_path / f"m{i}.py")
        files[-1].write_bytes(b"x = %d\n" % i)
    first = Memo(tmp_path / "cache", "words", __file__)
    for path in files[:3]:
        first.get(path, _words, Path.read_bytes)
    first.flush()
    later = Memo(tmp_path / "cache", "words", __file__)
    for path in files[3:]:
        later.get(path, _words, Path.read_bytes)
    later.flush()
    assert sorted(Memo(tmp_path / "cache", "words", __file__)._load()) == [str(p) for p in files[3:]]
