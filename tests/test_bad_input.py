"""Bad input and hostile conditions: each gets a clear message in `errors`, the rest of the run
goes on (the healthy model beside it is still fixed) and no byte of any file is lost."""

from __future__ import annotations

import concurrent.futures
import gc
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from contractfix import apply, engine, roundtrip, workers
from contractfix.config import Options
from contractfix.discover import MAX_SOURCE_BYTES
from contractfix.findings import Report
from contractfix.report import text as text_report
from tests.conftest import ROOT
from tests.privileges import permissions_enforced

MODELS = Path("vllm/model_executor/models")

VIOLATING = '''\
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory
from vllm.sequence import IntermediateTensors


class {name}Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = self.embed(input_ids), None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({{"hidden_states": hidden_states, "residual": residual}})
        return hidden_states
'''


def violating(name: str = "Tiny") -> str:
    """A model whose factory lacks "residual" (PP001, safe fix)."""
    return VIOLATING.format(name=name)


def fixed(name: str = "Tiny") -> str:
    return violating(name).replace('["hidden_states"], config', '["hidden_states", "residual"], config')


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A vLLM-style tree with one healthy-but-fixable model, `good.py`."""
    root = tmp_path / "repo"
    for folder in (root / "vllm", root / "vllm/model_executor", root / MODELS):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    (root / MODELS / "good.py").write_text(violating("Good"))
    return root


def files(root: Path) -> dict[str, bytes]:
    """Every regular file under `root` (links not followed), with its bytes."""
    out = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def fix_and_check(root: Path, bad: str, message: str, **unchanged_too: bytes) -> Report:
    """Run `fix` on `root`; the error names `bad` with `message`, good.py is fixed, nothing else moved."""
    before = files(root)
    report = engine.fix([root], Options())
    errors = [e for e in report.errors if Path(e.path).name == bad]
    assert errors, f"no error for {bad}: {report.errors}"
    assert any(message in e.message for e in errors), [e.message for e in errors]
    assert (root / MODELS / "good.py").read_text() == fixed("Good")
    after = files(root)
    before[(MODELS / "good.py").as_posix()] = fixed("Good").encode()
    assert after == before
    for path, data in unchanged_too.items():
        assert Path(path).read_bytes() == data
    return report


def put(root: Path, name: str, data: bytes) -> Path:
    path = root / MODELS / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("syntax.py", violating("Syntax").replace("def forward(self,", "def forward(self").encode(), "syntax error"),
        ("nul.py", violating("Nul").encode() + b"x = 1\x00\n", "contains a null byte (line 24)"),
        ("undecodable.py", b"# caf\xe9\n" + violating("Latin").encode(), "not valid utf-8 (byte 0xe9 on line 1)"),
        ("undecodable_string.py", violating("Str").encode() + b"NAME = 'caf\xe9'\n", "not valid utf-8 (byte 0xe9 on line 24)"),
        ("bom_latin1.py", b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + violating("Both").encode(), "bad coding declaration"),
        ("unknown_codec.py", b"# -*- coding: klingon -*-\n" + violating("Kl").encode(), "bad coding declaration"),
        ("nested.py", violating("Deep").encode() + b"x = " + b"-" * 100_000 + b"1\n", "nested"),
    ],
    ids=lambda v: v if isinstance(v, str) and v.endswith(".py") else "",
)
def test_unparsable_file_is_reported_and_skipped(repo: Path, name: str, data: bytes, message: str) -> None:
    put(repo, name, data)
    fix_and_check(repo, name, message)


@pytest.mark.parametrize(
    "name, encode",
    [
        ("latin1_cookie.py", lambda s: ("# -*- coding: latin-1 -*-\n# café\n" + s).encode("latin-1")),
        ("bom.py", lambda s: b"\xef\xbb\xbf" + ("# café\n" + s).encode()),
        ("crlf.py", lambda s: s.replace("\n", "\r\n").encode()),
        ("mixed_endings.py", lambda s: "".join(
            line + ("\r\n" if i % 3 == 0 else "\n") for i, line in enumerate(s.split("\n")[:-1])
        ).encode()),
        ("tabs.py", lambda s: s.replace("        ", "\t\t").replace("    ", "\t").encode()),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_unusual_but_valid_encodings_are_fixed_in_their_own_style(repo: Path, name: str, encode) -> None:
    """The fix lands, and every byte outside the edited line keeps its encoding and line ending."""
    path = put(repo, name, encode(violating("Odd")))
    report = engine.fix([repo], Options())
    assert report.errors == []
    assert path.read_bytes() == encode(fixed("Odd"))
    assert (repo / MODELS / "good.py").read_text() == fixed("Good")


WIDE_READ = '            tag = "übergröße"; residual = intermediate_tensors["residual"] if "residual" in intermediate_tensors else None'


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_columns_count_characters_on_lines_with_non_ascii_text(repo: Path, encoding: str) -> None:
    """ast counts columns in UTF-8 bytes; findings, SARIF and the column-matched fixes count
    characters, so an edit after "ü" on its line still lands (and the report points at it)."""
    cookie = "# -*- coding: latin-1 -*-\n" if encoding == "latin-1" else ""
    source = cookie + violating("Wide").replace('            residual = intermediate_tensors["residual"]', WIDE_READ)
    path = put(repo, "wide.py", source.encode(encoding))
    found = [f for f in engine.check([path], Options()).findings if f.rule == "PP007"]
    assert [(f.line, f.column) for f in found] == [(source.splitlines().index(WIDE_READ) + 1, WIDE_READ.index('"residual" in'))]
    report = engine.fix([path], Options())
    assert report.errors == []
    expected = fixed("Wide").replace(
        '            residual = intermediate_tensors["residual"]',
        WIDE_READ.replace("in intermediate_tensors", "in intermediate_tensors.tensors"),
    )
    assert path.read_bytes() == (cookie + expected).encode(encoding)


def test_generated_20mb_file_is_skipped(repo: Path) -> None:
    unit = violating("Gen").split("\n\n\n", 1)[1]
    body = "".join(unit.replace("class GenModel", f"class GenModel{i}") + "\n\n" for i in range(20 * 2**20 // len(unit) + 1))
    put(repo, "generated.py", violating("Gen").split("\n\n\n", 1)[0].encode() + b"\n\n\n" + body.encode())
    assert (repo / MODELS / "generated.py").stat().st_size >= 20 * 2**20 > MAX_SOURCE_BYTES
    put(repo, "table.py", b"TABLE = [\n" + b"    0,\n" * (3 * 2**20) + b"]\n")
    report = fix_and_check(repo, "generated.py", "too large to analyze (20.")
    assert not [e for e in report.errors if Path(e.path).name == "table.py"], "irrelevant big files are skipped silently"


def test_symlink_loop_is_reported(repo: Path) -> None:
    (repo / MODELS / "loop_a.py").symlink_to("loop_b.py")
    (repo / MODELS / "loop_b.py").symlink_to("loop_a.py")
    (repo / MODELS / "sub").mkdir()
    (repo / MODELS / "sub" / "up").symlink_to("..", target_is_directory=True)
    report = fix_and_check(repo, "loop_a.py", "symbolic link loop")
    assert any(Path(e.path).name == "loop_b.py" for e in report.errors)


def test_broken_symlink_is_reported(repo: Path) -> None:
    (repo / MODELS / "gone.py").symlink_to("nowhere.py")
    fix_and_check(repo, "gone.py", "broken symbolic link")


def test_symlink_outside_the_repo_is_not_written(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "shared_model.py"
    outside.parent.mkdir()
    outside.write_text(violating("Shared"))
    link = repo / MODELS / "shared_model.py"
    link.symlink_to(outside)
    report = fix_and_check(repo, "shared_model.py", "not written: is a symbolic link", **{str(outside): violating("Shared").encode()})
    assert link.is_symlink() and os.readlink(link) == str(outside)
    assert any(f.path.name == "shared_model.py" for f in report.remaining)


def test_unreadable_file_is_reported(repo: Path) -> None:
    secret = put(repo, "secret.py", violating("Secret").encode())
    secret.chmod(0)
    try:
        with permissions_enforced():
            report = engine.fix([repo], Options())
    finally:
        secret.chmod(0o644)
    assert [(Path(e.path).name, e.message) for e in report.errors] == [("secret.py", "cannot read: Permission denied")]
    assert secret.read_text() == violating("Secret")
    assert (repo / MODELS / "good.py").read_text() == fixed("Good")


def test_unlistable_folder_is_reported(repo: Path) -> None:
    closed = repo / MODELS / "closed"
    closed.mkdir()
    (closed / "inner.py").write_text(violating("Inner"))
    closed.chmod(0)
    try:
        with permissions_enforced():
            fix_and_check(repo, "closed", "cannot list folder: Permission denied")
    finally:
        closed.chmod(0o755)
    assert (closed / "inner.py").read_text() == violating("Inner")


def test_read_only_file_needing_a_fix_is_not_written(repo: Path) -> None:
    frozen = put(repo, "frozen.py", violating("Frozen").encode())
    frozen.chmod(0o444)
    fix_and_check(repo, "frozen.py", "not written: is read-only")
    assert frozen.stat().st_mode & 0o777 == 0o444


def test_hard_linked_file_is_not_split(repo: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin.py"
    linked = put(repo, "linked.py", violating("Linked").encode())
    os.link(linked, twin)
    fix_and_check(repo, "linked.py", "other hard links", **{str(twin): violating("Linked").encode()})
    assert os.stat(linked).st_ino == os.stat(twin).st_ino


def test_file_changed_after_analysis_is_not_overwritten(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone saves the file while the run works on it: their bytes win, the fix is dropped."""
    target = put(repo, "busy.py", violating("Busy").encode())
    theirs = violating("Busy").replace("nn.Module", "nn.Module  # edited meanwhile").encode()
    analyze = engine.analyze

    def analyze_then_edit(*args, **kwargs):
        session = analyze(*args, **kwargs)
        target.write_bytes(theirs)
        return session

    monkeypatch.setattr(engine, "analyze", analyze_then_edit)
    report = engine.fix([repo], Options())
    assert any(Path(e.path).name == "busy.py" and "changed on disk since it was analyzed" in e.message for e in report.errors)
    assert target.read_bytes() == theirs
    assert (repo / MODELS / "good.py").read_text() == fixed("Good")


def test_file_changed_while_the_temp_file_is_written_is_not_overwritten(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "model.py"
    target.write_text(violating())
    result = apply.Rewrite(violating().encode(), fixed().encode(), ())
    mkstemp = apply.tempfile.mkstemp

    def mkstemp_then_edit(*args, **kwargs):
        made = mkstemp(*args, **kwargs)
        target.write_text("# theirs\n")
        return made

    monkeypatch.setattr(apply.tempfile, "mkstemp", mkstemp_then_edit)
    with pytest.raises(apply.FixError, match="changed on disk"):
        apply.write_atomic(target, result)
    assert target.read_text() == "# theirs\n"
    assert [p.name for p in tmp_path.iterdir()] == ["model.py"], "the temp file is removed"


def test_fifo_is_skipped_without_blocking(repo: Path) -> None:
    os.mkfifo(repo / MODELS / "pipe.py")
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(fix_and_check(repo, "pipe.py", "not a regular file")), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the run blocked on the FIFO"
    assert outcome, "fix_and_check failed in the worker thread (see its traceback above)"


def test_fifo_given_as_path_is_reported(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    report = engine.check([fifo], Options())
    assert [e.message for e in report.errors] == ["not a regular file or directory"]


def test_empty_repo_is_reported(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    result = subprocess.run(
        [sys.executable, "-m", "contractfix", "check", str(empty)], check=False, capture_output=True, text=True,
        cwd=Path(__file__).parents[1],
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no Python files found" in result.stdout + result.stderr


def test_empty_and_whitespace_files_are_fine(repo: Path) -> None:
    put(repo, "empty.py", b"")
    put(repo, "blank.py", b"\n\n   \n")
    report = engine.fix([repo], Options())
    assert report.errors == []
    assert (repo / MODELS / "good.py").read_text() == fixed("Good")


def test_bad_file_among_many_takes_the_parallel_path(repo: Path) -> None:
    """Past the parallel threshold the analysis runs in worker processes; errors still come back."""
    for i in range(workers.PARALLEL_THRESHOLD + 2):
        put(repo, f"m{i:02d}.py", fixed(f"M{i}").encode())
    put(repo, "deep.py", violating("Deep").encode() + b"x = " + b"-" * 100_000 + b"1\n")
    put(repo, "syntax.py", b"class IntermediateTensors(:\n    def forward(self): ...\n")
    report = fix_and_check(repo, "deep.py", "nested")
    assert any(Path(e.path).name == "syntax.py" for e in report.errors)


KILLER = """
import os, signal, sys
from pathlib import Path
from contractfix import apply, engine
from contractfix.config import Options

point = sys.argv[2]
fdopen, replace = os.fdopen, os.replace

class HalfWriter:
    def __init__(self, handle):
        self.handle = handle
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    def write(self, data):
        self.handle.write(data[: len(data) // 2])
        self.handle.flush()
        os.kill(os.getpid(), signal.SIGKILL)

def killing_fdopen(fd, mode="r", *args, **kwargs):
    handle = fdopen(fd, mode, *args, **kwargs)
    return HalfWriter(handle) if mode == "wb" else handle

def killing_replace(src, dst):
    if point == "after-rename":
        replace(src, dst)
    os.kill(os.getpid(), signal.SIGKILL)

if point == "mid-write":
    apply.os.fdopen = killing_fdopen
else:
    apply.os.replace = killing_replace
engine.fix([Path(sys.argv[1])], Options(cache=False))
"""


@pytest.mark.parametrize("point", ["mid-write", "before-rename", "after-rename"])
def test_killed_mid_write_never_leaves_a_truncated_file(repo: Path, point: str) -> None:
    good = repo / MODELS / "good.py"
    result = subprocess.run(
        [sys.executable, "-c", KILLER, str(repo), point], check=False, capture_output=True, cwd=Path(__file__).parents[1], timeout=120
    )
    assert result.returncode == -signal.SIGKILL, result.stderr.decode()
    assert good.read_text() == (fixed("Good") if point == "after-rename" else violating("Good"))
    leftovers = [p.name for p in good.parent.iterdir() if p.name.endswith(".contractfix")]
    assert all(not name.endswith(".py") for name in leftovers), "a stale temp file would be discovered"
    if point == "after-rename":
        assert leftovers == []
    (good.parent / f".good.py.{os.getpid()}.live.contractfix").write_bytes(b"another run's write")
    again = engine.fix([repo], Options())
    assert again.errors == [] and good.read_text() == fixed("Good")
    remaining = sorted(p.name for p in good.parent.iterdir() if p.name.endswith(".contractfix"))
    assert remaining == [f".good.py.{os.getpid()}.live.contractfix"], "the dead run's temp file is left, or a live one removed"



def test_two_concurrent_sweeps_never_corrupt_the_branch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two `contractfix sweep` processes on one repo at once: each ends cleanly (done, or refused
    with a message), the branch is one well-formed fix commit on the base, no worktree is left
    and the user's checkout is untouched."""
    gitrepo = pytest.importorskip("tests.gitrepo", reason="the sweep test helpers are not there yet")
    sweep = pytest.importorskip("contractfix.sweep", reason="`contractfix sweep` is not there yet")
    home = tmp_path / "home"
    home.mkdir()
    for name, value in {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig")}.items():
        monkeypatch.setenv(name, value)
    repo = gitrepo.example_repo(tmp_path / "checkout")
    base = repo.head.commit.hexsha
    before = gitrepo.checkout_state(repo)
    command = [sys.executable, "-m", "contractfix", "sweep", str(tmp_path / "checkout"), "--author", "Bot <bot@example.invalid>"]
    for _ in range(3):
        runs = [subprocess.Popen(command, cwd=Path(__file__).parents[1], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outcomes = [(run.wait(timeout=300), *run.communicate()) for run in runs]
        for code, out, err in outcomes:
            assert code in (0, 2) and "Traceback" not in err, out + err
        assert any(code == 0 for code, _, _ in outcomes), outcomes
        tip = repo.commit(sweep.DEFAULT_BRANCH)
        assert [p.hexsha for p in tip.parents] == [base]
        assert sorted(tip.stats.files) == sorted([gitrepo.STEP_LITE, gitrepo.GEMMA_LITE])
        repo.git.fsck("--strict")
        assert repo.git.worktree("list", "--porcelain").count("worktree ") == 1
        assert gitrepo.checkout_state(repo) == before


# Line numbering: only \n, \r\n and \r end a line, as for Python's tokenizer (issue 11, item 4).


@pytest.mark.parametrize("odd", ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"], ids=ascii)
def test_evidence_shows_the_reported_line_after_characters_splitlines_breaks_at(repo: Path, odd: str) -> None:
    """`str.splitlines` also breaks at form feeds and friends; every line number after one must
    still point at the line Python reports, in evidence and in the diff."""
    source = violating("Odd").replace("\n\n\nclass", f"\n# section{odd}one\n#{odd}\n\nclass")
    path = put(repo, "odd.py", source.encode())
    lines = source.split("\n")
    found = [f for f in engine.check([path], Options()).findings if f.rule == "PP001"]
    assert found and all(e.text for f in found for e in f.evidence)
    for evidence in (e for f in found for e in f.evidence):
        assert evidence.text == lines[evidence.line - 1].strip(), evidence
    report = engine.fix([path], Options(), write=False)
    diff = text_report.unified_diff(report.changes)
    assert "\n-            [\"hidden_states\"], config.hidden_size\n" in diff
    assert len([line for line in diff.splitlines(keepends=True) if line.startswith(" ")]) == 6, diff


# Layouts libcst does not print back as they are (issue 11, item 25): fixed byte for byte, or
# refused with the real reason; never "changed lines outside the code it meant to edit".


def form_feed_before_every_statement(text: str) -> str:
    """A form feed at the start of every indented line that starts with a name."""
    return re.sub(r"(?m)^(?=[ \t]+[A-Za-z])", "\f", text)


LAYOUTS = {
    "cr_only": lambda s: s.replace("\n", "\r"),
    "form_feed_in_one_indentation": lambda s: s.replace("\n        self.make_empty", "\n\f        self.make_empty"),
    "form_feed_after_spaces": lambda s: s.replace("\n        super()", "\n    \f        super()"),
    "form_feed_before_every_statement": form_feed_before_every_statement,
    "form_feeds_and_cr_only": lambda s: form_feed_before_every_statement(s).replace("\n", "\r"),
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_layouts_libcst_drops_are_fixed_byte_for_byte(repo: Path, layout) -> None:
    path = put(repo, "odd.py", layout(violating("Odd")).encode())
    report = engine.fix([repo], Options())
    assert report.errors == []
    assert path.read_bytes() == layout(fixed("Odd")).encode()
    assert (repo / MODELS / "good.py").read_text() == fixed("Good")


def test_form_feed_on_the_edited_statement_stays(repo: Path) -> None:
    """The edit's column counts the form feed; the form feed is back in front of the fixed line."""
    read = '\n            residual = intermediate_tensors["residual"]'
    source = violating("Odd").replace(read, '\n\f            residual = intermediate_tensors.get("residual")')
    path = put(repo, "odd.py", source.encode())
    report = engine.fix([repo], Options())
    assert report.errors == []
    assert path.read_text() == fixed("Odd").replace(
        read, '\n\f            residual = intermediate_tensors.tensors.get("residual")'
    )


@pytest.mark.parametrize("fixture", ["PP001/list_styles.py", "PP002/hard_cases.py", "PP004/wrappers.py", "PP007/keys.py"])
def test_fixtures_are_fixed_alike_in_layouts_libcst_drops(fixture: str, tmp_path: Path) -> None:
    """Insertions, literal layouts and signature rewrites: CR-only endings give the same fix with
    CR endings; form feeds before statements give the same fix with every form feed kept."""
    source = (ROOT / "tests" / "fixtures" / fixture).read_bytes()
    options = Options(select=(fixture.split("/")[0],), unsafe_fixes=True, cache=False)

    def fix(name: str, data: bytes) -> bytes:
        path = tmp_path / name / Path(fixture).name
        path.parent.mkdir()
        path.write_bytes(data)
        assert engine.fix([path], options).errors == []
        return path.read_bytes()

    plain = fix("plain", source)
    assert plain != source
    assert fix("cr", source.replace(b"\n", b"\r")) == plain.replace(b"\n", b"\r")
    feeds = form_feed_before_every_statement(source.decode()).encode()
    with_feeds = fix("feeds", feeds)
    assert with_feeds.replace(b"\f", b"") == plain
    assert with_feeds.count(b"\f") == feeds.count(b"\f")


def test_layout_libcst_cannot_keep_is_refused_with_the_reason(repo: Path) -> None:
    """libcst drops a blank line continued with a backslash: where it lies in what libcst reads
    (the method, as the factory's statement shares its line with another), the file is left as
    it is."""
    source = violating("Cont").replace("        super().__init__()\n        self.", "        super().__init__(); self.").replace(
        "config.hidden_size\n        )\n", "config.hidden_size\n        )\n        \\\n        self.ready = True\n"
    )
    put(repo, "continued.py", source.encode())
    fix_and_check(repo, "continued.py", "libcst cannot print line 13 back byte for byte (a backslash continuation)")


def test_layout_libcst_cannot_keep_outside_the_statement_it_reads_is_kept_as_it_is(repo: Path) -> None:
    """Issue 39: libcst reads the statement a local edit lies in, not the method around it; the
    blank line continued with a backslash above that statement stays as it was."""
    source = violating("Cont").replace("        super().__init__()\n", "        super().__init__()\n        \\\n")
    put(repo, "continued.py", source.encode())
    report = engine.fix([repo], Options())
    assert not report.errors, report.errors
    assert (repo / MODELS / "continued.py").read_text() == source.replace(
        '["hidden_states"], config', '["hidden_states", "residual"], config'
    )


def test_fix_that_would_mix_line_endings_is_refused(tmp_path: Path) -> None:
    """libcst ends new lines as the file's first line; in a file of CR lines whose first line
    ends in LF, the inserted lines would end in LF (and swallow a CR into a CRLF)."""
    first, rest = (ROOT / "tests/fixtures/PP004/wrappers.py").read_bytes().split(b"\n", 1)
    path = tmp_path / "wrappers.py"
    path.write_bytes(first + b"\n" + rest.replace(b"\n", b"\r"))
    before = path.read_bytes()
    report = engine.fix([path], Options(select=("PP004",), cache=False))
    assert [e.message for e in report.errors] == ["fix not applied: the fix would change the file's line endings"]
    assert path.read_bytes() == before


def test_form_feed_line_rewritten_into_more_lines_is_refused() -> None:
    parsed = roundtrip.parse(b"if x:\n    y = 1\n\f    z = 1\n")
    assert parsed.cut == {2: b"\f"}
    with pytest.raises(roundtrip.LayoutError, match="line 3 has a form feed in its indentation"):
        parsed.restored(b"if x:\n    y = 1\n    z = (\n        1)\n")


# Runaway resources: the worker pool (issue 11, items 8 and 9).

SLOW_PARALLEL_CHECK = """
import sys, time
from pathlib import Path
from contractfix import analysis, engine
from contractfix.config import Options

def slow(*args):
    time.sleep(120)

analysis.analyze_source = slow  # what the workers call
engine.check([Path(sys.argv[1])], Options(jobs=2, cache=False))
"""


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found.update(int(c) for c in task.read_text().split())
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_workers_die_with_the_main_process(repo: Path, sig: signal.Signals) -> None:
    """Killing only the main process (as IDEs and CI agents do) during parallel analysis leaves
    no worker behind holding the output pipe: the reader sees the end of the output."""
    for i in range(workers.PARALLEL_THRESHOLD + 2):
        put(repo, f"m{i:02d}.py", violating(f"M{i}").encode())
    main = subprocess.Popen(
        [sys.executable, "-c", SLOW_PARALLEL_CHECK, str(repo)], cwd=Path(__file__).parents[1],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    pids: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline:
            pids = _children(main.pid)
            time.sleep(0.1)
        assert len(pids) >= 2, "the pool never started"
        main.send_signal(sig)
        main.wait(timeout=30)
        done = threading.Event()
        threading.Thread(target=lambda: (main.stdout.read(), done.set()), daemon=True).start()
        assert done.wait(timeout=30), "a worker still holds the output pipe"
    finally:
        for pid in pids | _children(main.pid) if main.poll() is None else pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        main.kill()
        main.wait()


def test_a_run_leaves_the_collector_as_it_found_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` and `fix` collect less often while they run, for speed; a caller using the
    package keeps its own settings, also when the run raises."""
    put(repo, "m.py", violating("M").encode())
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    real = engine.analyze

    def spy(*args, **kwargs):
        seen.append(gc.get_threshold())
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "analyze", spy)
    engine.check([repo], Options(cache=False))
    engine.fix([repo], Options(cache=False), write=False)
    assert len(seen) == 2 and all(threshold[0] > before[0] for threshold in seen)
    assert gc.get_threshold() == before
    monkeypatch.setattr(engine, "analyze", lambda *args, **kwargs: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        engine.check([repo], Options(cache=False))
    assert gc.get_threshold() == before


def test_jobs_is_capped_at_the_cpus_and_the_work(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    def recording(size, *args, **kwargs):
        sizes.append(size)
        return real(2, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", recording)
    for i in range(workers.PARALLEL_THRESHOLD + 2):
        put(repo, f"m{i:02d}.py", violating(f"M{i}").encode())
    engine.check([repo], Options(jobs=100_000, cache=False))
    assert sizes and 1 <= sizes[0] <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("value", ["0", "-5"])
def test_non_positive_jobs_is_refused(repo: Path, value: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "contractfix", "check", "--no-cache", "--jobs", value, str(repo)], check=False,
        capture_output=True, text=True, cwd=Path(__file__).parents[1],
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--jobs" in result.stderr and "Traceback" not in result.stderr


def test_fifo_in_the_facts_cache_never_blocks(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO (or any non-regular file) where a cache entry belongs is a miss, read without blocking."""
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    first = engine.check([repo], Options())
    entries = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert entries, "nothing was cached"
    for entry in entries:
        entry.unlink()
        os.mkfifo(entry)
    outcome: list[Report] = []
    worker = threading.Thread(target=lambda: outcome.append(engine.check([repo], Options())), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the run blocked on a FIFO in the cache"
    assert outcome and outcome[0].findings == first.findings and outcome[0].errors == []


# A registry that cannot be read is an error for that file; the run goes on (issue 11, item 13).


@pytest.mark.parametrize(
    "data, message",
    [
        (b'_TEXT_GENERATION_MODELS = {\n    "GoodModel": ("good", "GoodModel"),\n', "syntax error: '{' was never closed (line 1)"),
        (b'_TEXT_GENERATION_MODELS = {}\x00\n', "null"),
        (b"# Models\n\nSee `vllm/model_executor`.\n", "syntax error"),
    ],
    ids=["mid-edit", "nul-byte", "markdown"],
)
def test_unreadable_registry_is_an_error_for_that_file(repo: Path, data: bytes, message: str) -> None:
    registry = put(repo, "registry.py", data)
    report = fix_and_check(repo, "registry.py", message)
    assert [str(e.path) for e in report.errors] == [str(registry)]
    assert registry.read_bytes() == data


@pytest.mark.parametrize("given", ["README.md", "/etc/passwd", "pipe"])
def test_registry_option_naming_no_registry_is_an_error(repo: Path, given: str) -> None:
    (repo / "README.md").write_text("# A model zoo\n\nSee `registry.py`.\n")
    os.mkfifo(repo / "pipe")
    path = repo / given
    if not path.exists():
        pytest.skip(f"{given} does not exist here")
    result = subprocess.run(
        [sys.executable, "-m", "contractfix", "fix", "--no-cache", "--registry", str(path), str(repo)], check=False,
        capture_output=True, text=True, cwd=Path(__file__).parents[1], timeout=120,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"{path}: error: " in result.stdout and "registry" in result.stdout, result.stdout
    assert (repo / MODELS / "good.py").read_text() == fixed("Good")


# File names that are not valid UTF-8 (issue 11, item 17).


@pytest.mark.parametrize(
    "command",
    [["check"], ["check", "--format", "json"], ["check", "--format", "sarif"], ["check", "--format", "github"],
     ["fix", "--diff"], ["fix"]],
    ids=" ".join,
)
def test_file_name_that_is_not_utf8_breaks_no_command(repo: Path, command: list[str]) -> None:
    """Such a name is analyzed and fixed like any other, and shown with `\\xNN` for the odd bytes,
    even where the output's encoding is strict UTF-8."""
    odd = Path(os.fsdecode(bytes(repo / MODELS) + b"/st\xfep.py"))
    odd.write_text(violating("Odd"))
    put(repo, "empty\xff.py".encode("latin-1").decode("utf-8", "surrogateescape"), b"")
    result = subprocess.run(
        [sys.executable, "-m", "contractfix", *command, "--no-cache", "."], check=False, capture_output=True,
        cwd=repo, env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    out, err = result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    assert result.returncode in (0, 1) and "Traceback" not in err, out + err
    if command == ["fix"]:
        assert odd.read_text() == fixed("Odd")
    elif "sarif" in command:
        assert "st%FEp.py" in out
    else:
        assert "st\\\\xfep.py" in out if "json" in command else "st\\xfep.py" in out


# Output and working directory that cannot be used: one-line error, exit 2 (issue 11, item 20).

def _cli_in_shell(script: str, repo: Path) -> subprocess.CompletedProcess:
    """Run `script` with `$CLI` bound to `python -m contractfix` and `$REPO` to the checked tree."""
    env = {**os.environ, "CLI": f"{sys.executable} -m contractfix", "REPO": str(repo)}
    return subprocess.run(["sh", "-c", script], check=False, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_output_to_a_full_device_is_an_error(repo: Path) -> None:
    result = _cli_in_shell("$CLI check --no-cache $REPO > /dev/full", repo)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "error: cannot write the output: No space left on device"


def test_closed_standard_output_is_an_error(repo: Path) -> None:
    before = files(repo)
    result = _cli_in_shell("$CLI fix --no-cache $REPO >&-", repo)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "error: standard output is closed"
    assert files(repo) == before, "nothing is done when the result cannot be reported"


def test_deleted_working_directory_is_an_error(repo: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    result = _cli_in_shell(f"cd {gone} && rmdir {gone} && $CLI check --no-cache $REPO", repo)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "error: the current directory no longer exists"


def test_smoke_json_into_a_missing_folder_is_refused_first(repo: Path) -> None:
    result = _cli_in_shell("$CLI smoke --json /missing/dir/x.json $REPO/vllm/model_executor/models/good.py", repo)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "error: --json /missing/dir/x.json: folder /missing/dir does not exist"


def test_forward_returning_a_call_of_a_subscripted_module_is_analysed(tmp_path: Path) -> None:
    """`return self.models[0](ids, pos, intermediate_tensors)`: a callee that is no dotted name
    is read as a forward-shaped call, not a crash."""
    path = tmp_path / "indexed.py"
    path.write_text(
        "from torch import nn\n\nfrom vllm.model_executor.models.interfaces import SupportsPP\n\n\n"
        "class IndexedForCausalLM(nn.Module, SupportsPP):\n"
        "    def forward(self, input_ids, positions, intermediate_tensors=None):\n"
        "        return self.models[0](input_ids, positions, intermediate_tensors)\n"
    )
    report = engine.check([path], Options(select=("PP004", "PP006"), cache=False))
    assert report.errors == []
    assert [f.rule for f in report.findings] == ["PP004"]
