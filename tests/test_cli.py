"""The command line through Typer's runner: exit codes, formats, options, config, demo."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix.cli import app
from contractfix.demo import copy_example
from contractfix.rules import ALL
from contractfix.rules.docs import DOCS, explain_text, markdown_table, pages
from tests.conftest import ROOT

runner = CliRunner()
STEP3 = ROOT / "tests" / "fixtures" / "PP001" / "step3_style.py"
CLEAN = ROOT / "tests" / "fixtures" / "PP001" / "clean_patterns.py"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_check_exit_codes(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    shutil.copy(CLEAN, "clean.py")
    assert invoke("check", "clean.py").exit_code == 0
    result = invoke("check", "step3.py")
    assert result.exit_code == 1
    assert 'step3.py:16:13: PP001 "residual" sent to the next rank' in result.output
    assert invoke("check", "missing.py").exit_code == 2


def test_check_json_document(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    Path("broken.py").write_text("def forward(self, intermediate_tensors:\n")
    result = invoke("check", "step3.py", "broken.py", "--format", "json")
    doc = json.loads(result.output)
    assert result.exit_code == 2
    assert doc["version"] == 1
    (finding,) = doc["findings"]
    assert finding["rule"] == "PP001" and finding["name"] == "key-not-allocated"
    assert finding["path"] == "step3.py" and finding["class"] == "StepModel"
    assert finding["keys"] == ["residual"]
    assert finding["fix"]["applicability"] == "safe"
    assert {e["line"] for e in finding["evidence"]} == {16, 24, 27}
    assert doc["errors"][0]["path"] == "broken.py" and "syntax error" in doc["errors"][0]["message"]
    assert doc["summary"] == {"files_scanned": 2, "findings": 1, "warnings": 0, "fixable": 1, "unsafe_fixable": 0}


def test_select_and_ignore(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    assert invoke("check", "step3.py", "--select", "PP002,PP003").exit_code == 0
    assert invoke("check", "step3.py", "--ignore", "pp001").exit_code == 0
    assert invoke("check", "step3.py", "--select", "PP001").exit_code == 1


def test_fix_diff_writes_nothing_and_fix_is_idempotent(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    before = Path("step3.py").read_bytes()
    result = invoke("fix", "step3.py", "--diff")
    assert '+            ["hidden_states", "residual"], config.hidden_size' in result.output
    assert Path("step3.py").read_bytes() == before
    assert invoke("fix", "step3.py").exit_code == 0
    after = Path("step3.py").read_bytes()
    assert after == before.replace(b'["hidden_states"], config', b'["hidden_states", "residual"], config')
    second = invoke("fix", "step3.py")
    assert second.exit_code == 0 and "0 fixed" in second.output
    assert Path("step3.py").read_bytes() == after


def test_fix_reports_what_is_left(in_dir: Path) -> None:
    shutil.copy(ROOT / "tests" / "fixtures" / "PP001" / "read_not_sent.py", "reads.py")
    result = invoke("fix", "reads.py")
    assert result.exit_code == 1
    assert "1 finding(s) left" in result.output and '"aux" read on a non-first rank' in result.output


def test_unsafe_fixes_only_on_request(in_dir: Path) -> None:
    shutil.copy(ROOT / "tests" / "fixtures" / "PP006" / "wrappers.py", "wrappers.py")
    before = Path("wrappers.py").read_bytes()
    assert invoke("fix", "wrappers.py").exit_code == 1
    assert Path("wrappers.py").read_bytes() == before
    invoke("fix", "wrappers.py", "--unsafe-fixes")
    assert b"if not get_pp_group().is_last_rank:" in Path("wrappers.py").read_bytes()


def test_pyproject_config_and_cli_override(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    Path("pyproject.toml").write_text('[tool.contractfix]\nignore = ["PP001"]\nexclude = ["skipped/*"]\n')
    assert invoke("check", ".").exit_code == 0
    assert invoke("check", ".", "--select", "PP001", "--ignore", "PP005").exit_code == 1
    Path("pyproject.toml").write_text('[tool.contractfix]\npp002-scope = "everything"\n')
    result = invoke("check", ".")
    assert result.exit_code == 2 and "pp002-scope" in result.output


def test_pp002_scope_all(in_dir: Path) -> None:
    shutil.copy(ROOT / "tests" / "fixtures" / "PP002" / "not_entries.py", "inner.py")
    assert invoke("check", "inner.py", "--select", "PP002").exit_code == 0
    result = invoke("check", "inner.py", "--select", "PP002", "--pp002-scope", "all", "--show-fixes")
    assert result.exit_code == 1
    assert "InnerModel.forward (model forward (--pp002-scope all))" in result.output
    assert "ModelRunner" not in result.output and "_SupportsPPType" not in result.output


def test_rules_and_explain() -> None:
    listing = invoke("rules").output
    for code, rule in ALL.items():
        assert f"{code}  {rule.name}" in listing
    page = invoke("explain", "pp003").output
    assert page.startswith("PP003 key-allocated-not-sent (fix: safe)")
    assert ALL["PP003"].before.splitlines()[0] in page
    assert invoke("explain", "PP999").exit_code == 2


def test_readme_rule_table_and_rule_pages_are_generated_from_metadata(tmp_path: Path) -> None:
    table = invoke("rules", "--markdown").output
    assert table.strip() == markdown_table(ALL.values(), DOCS)
    assert table in (ROOT / "README.md").read_text(), "refresh README: contractfix rules --markdown"
    assert invoke("rules", "--docs", str(tmp_path)).exit_code == 0
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    kept = {p.name: p.read_text() for p in (ROOT / DOCS).iterdir()}
    assert written == kept, "refresh the rule pages: contractfix rules --docs docs/rules"
    assert written == pages(ALL.values()) and len(written) == len(ALL) + 1
    for code, rule in ALL.items():
        assert rule.rationale in written[f"{code}.md"] and explain_text(rule).splitlines()[2] in written[f"{code}.md"]
    assert invoke("rules", "--docs", str(tmp_path / "missing")).exit_code == 2


@pytest.mark.parametrize("verbose", [False, True])
def test_cannot_verify_notes_in_verbose_mode(in_dir: Path, verbose: bool) -> None:
    shutil.copy(ROOT / "tests" / "fixtures" / "PP001" / "conditional.py", "conditional.py")
    args = ["check", "conditional.py", "--select", "PP001"] + (["-v"] if verbose else [])
    output = invoke(*args).output
    assert ("cannot verify" in output) is verbose


def test_suppression_on_class_line(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    text = Path("step3.py").read_text().replace(
        "class StepModel(nn.Module):", "class StepModel(nn.Module):  # contractfix: ignore[PP001]"
    )
    Path("step3.py").write_text(text)
    assert invoke("check", "step3.py").exit_code == 0


def test_check_single_file_resolves_bases_from_its_repo(in_dir: Path) -> None:
    copy_example(in_dir / "repo")
    mimo = in_dir / "repo" / "vllm" / "model_executor" / "models" / "tiny_mimo.py"
    assert invoke("check", str(mimo)).exit_code == 0
    llama = mimo.with_name("tiny_llama.py")
    llama.write_text(llama.read_text().replace('["hidden_states", "residual"]', '["hidden_states"]'))
    result = invoke("check", str(mimo), "--format", "json")
    doc = json.loads(result.output)
    assert [(f["rule"], f["class"]) for f in doc["findings"]] == [("PP001", "TinyMimoModel")]
    assert "outside the checked paths" in doc["findings"][0]["message"]


def test_config_is_not_taken_from_above_the_git_root(in_dir: Path) -> None:
    Path("pyproject.toml").write_text('[tool.contractfix]\nignore = ["PP001"]\n')
    repo = in_dir / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copy(STEP3, repo / "step3.py")
    assert invoke("check", str(repo)).exit_code == 1
    shutil.copy(STEP3, in_dir / "step3.py")
    assert invoke("check", "step3.py").exit_code == 0


def test_text_colours_through_rich_on_a_terminal_only(in_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from contractfix.report import color

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    line = "a.py:1:1: PP001 x (C) [safe fix: y]"

    def shown(stream, mode="auto"):
        color.emit(line, stream, mode)
        return stream.getvalue()

    coloured = shown(Terminal())
    assert "\x1b[" in coloured and re.sub(r"\x1b\[[0-9;]*m", "", coloured) == line + "\n"
    assert shown(io.StringIO()) == line + "\n"
    assert shown(Terminal(), "never") == line + "\n"
    assert "\x1b[" in shown(io.StringIO(), "always")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in shown(io.StringIO())
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in shown(Terminal())
    monkeypatch.delenv("NO_COLOR")
    shutil.copy(STEP3, "step3.py")
    assert "\x1b[" not in invoke("check", "step3.py").output
    assert "\x1b[" in invoke("check", "step3.py", "--color", "always").output
    assert "\x1b[" not in invoke("check", "step3.py", "--color", "always", "--format", "json").output


def test_version_and_short_help() -> None:
    from contractfix import __version__

    for flag in ("--version", "-V"):
        result = invoke(flag)
        assert result.exit_code == 0 and result.output == f"contractfix {__version__}\n"
    assert invoke("-h").output == invoke("--help").output
    assert "--select" in invoke("check", "-h").output


def test_fix_diff_exits_1_while_fixes_are_pending(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    result = invoke("fix", "--diff", "step3.py")
    assert result.exit_code == 1 and result.output.startswith("--- a/step3.py")
    invoke("fix", "step3.py")
    result = invoke("fix", "--diff", "step3.py")
    assert result.exit_code == 0 and result.output.strip() == ""


def test_fix_diff_tells_on_standard_error_why_a_file_was_not_fixed(in_dir: Path) -> None:
    """`--diff` printed the patch and exited 2 without a word on the file it could not fix; the
    reason now goes to standard error, and the patch stays a patch."""
    shutil.copy(STEP3, "step3.py")
    Path("broken.py").write_text(STEP3.read_text() + "\n\ndef helper():\n    return 1 +\n")
    result = invoke("fix", "--diff", "step3.py", "broken.py")
    assert result.exit_code == 2
    assert result.stdout.startswith("--- a/step3.py") and "broken.py" not in result.stdout
    assert result.stderr.startswith("broken.py: error: syntax error: invalid syntax (line "), result.stderr


def test_exit_zero_output_file_and_quiet(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    result = invoke("check", "step3.py", "--exit-zero", "--output-file", "out.txt")
    assert result.exit_code == 0 and result.output == ""
    written = Path("out.txt").read_text()
    assert "PP001" in written and "1 error(s), 0 warning(s)" in written and "\x1b[" not in written
    assert invoke("check", "missing.py", "--exit-zero").exit_code == 2
    quiet = invoke("check", "step3.py", "-q")
    assert quiet.exit_code == 1 and "PP001" in quiet.output and "error(s)" not in quiet.output
    one = invoke("check", "step3.py", "-o", "no/such/dir/out.txt")
    assert one.exit_code == 2 and "no/such/dir/out.txt" in one.output


def test_check_reads_standard_input_as_the_named_file(in_dir: Path) -> None:
    copy_example(in_dir / "repo")
    llama = in_dir / "repo" / "vllm" / "model_executor" / "models" / "tiny_llama.py"
    broken = llama.read_text().replace('["hidden_states", "residual"]', '["hidden_states"]')
    result = runner.invoke(app, ["check", "-", "--stdin-filename", str(llama), "--format", "json"], input=broken)
    doc = json.loads(result.output)
    assert result.exit_code == 1
    assert {(f["rule"], f["path"]) for f in doc["findings"]} == {("PP001", "repo/vllm/model_executor/models/tiny_llama.py")}
    assert invoke("check", str(llama)).exit_code == 0, "the file on disk was not touched"
    clean = runner.invoke(app, ["check", "-", "--stdin-filename", str(llama)], input=llama.read_text())
    assert clean.exit_code == 0
    assert runner.invoke(app, ["check", "-", "x.py"], input="").exit_code == 2


def test_fix_standard_input_prints_the_fixed_source(in_dir: Path) -> None:
    source = STEP3.read_text()
    result = runner.invoke(app, ["fix", "-", "--stdin-filename", "step3.py"], input=source)
    assert result.exit_code == 0
    assert result.stdout == source.replace('["hidden_states"], config', '["hidden_states", "residual"], config')
    assert not Path("step3.py").exists()
    plain = runner.invoke(app, ["fix", "-"], input="x = 1\n")
    assert plain.exit_code == 0 and plain.stdout == "x = 1\n"


def test_add_noqa_suppresses_every_finding_left(in_dir: Path) -> None:
    shutil.copy(ROOT / "tests" / "fixtures" / "PP001" / "read_not_sent.py", "reads.py")
    shutil.copy(STEP3, "step3.py")
    Path("step3.py").write_bytes(Path("step3.py").read_bytes().replace(b"\n", b"\r\n"))
    before = {p: Path(p).read_bytes() for p in ("reads.py", "step3.py")}
    result = invoke("check", ".", "--add-noqa")
    assert result.exit_code == 0 and "added 2 suppression(s)" in result.output
    assert invoke("check", ".").exit_code == 0
    for name, old in before.items():
        new = Path(name).read_bytes()
        changed = [(a, b) for a, b in zip(old.splitlines(True), new.splitlines(True), strict=True) if a != b]
        assert len(changed) == 1, name
        a, b = changed[0]
        assert b == a.rstrip(b"\r\n") + b"  # contractfix: ignore[PP001]" + a[len(a.rstrip(b"\r\n")):]


def test_suppression_inside_a_string_does_not_count(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    with open("step3.py", "a") as handle:
        handle.write('\nNOTE = """\n# contractfix: ignore[PP004]\n"""\n')
    result = invoke("check", "step3.py")
    assert "PP100" not in result.output


def test_suppression_after_a_form_feed_still_applies(in_dir: Path) -> None:
    """Issue 11 item 4 for suppressions: lines are numbered as Python's tokenizer does."""
    text = STEP3.read_text().replace(
        "class StepModel(nn.Module):", "\f\nclass StepModel(nn.Module):  # contractfix: ignore[pp001]", 1
    )
    Path("step3.py").write_text("# \f x\n" + text)
    result = invoke("fix", "step3.py")
    assert result.exit_code == 0 and "0 fixed" in result.output


def test_select_pp100_alone_reports_every_suppression_like_ruff_ruf100(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    text = Path("step3.py").read_text().replace(
        "class StepModel(nn.Module):", "class StepModel(nn.Module):  # contractfix: ignore[PP001, PP999]"
    )
    Path("step3.py").write_text(text)
    default = invoke("check", "step3.py", "--show-fixes")
    assert default.exit_code == 1 and "unused suppression of PP999: no such rule" in default.output
    assert "suppression of PP001" not in default.output
    alone = invoke("check", "step3.py", "--select", "PP100", "--format", "full")
    assert alone.exit_code == 1
    assert "unused suppression of PP001: the rule is not selected" in alone.output
    assert "PP999" in alone.output


def test_import_cli_loads_neither_git_nor_sweep_nor_smoke_nor_the_pool() -> None:
    """What a pre-commit run on one file (no worker pool) imports is paid by every such run."""
    code = (
        "import sys, contractfix.cli; bad = sorted(m for m in sys.modules if m in ('git', 'multiprocessing') or "
        "m.startswith(('git.', 'contractfix.sweep', 'contractfix.smoke', 'contractfix.gitops', 'contractfix.gh', "
        "'contractfix.demo', 'contractfix.report.sarif', 'contractfix.report.github'))); "
        "import os; print(bad, os.path.realpath(contractfix.cli.__file__))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", str(ROOT / "cli.py")]
    import inspect

    from contractfix import cli
    from contractfix.sweep import DEFAULT_BRANCH

    assert inspect.signature(cli.sweep).parameters["branch"].default == DEFAULT_BRANCH


RUN = """
import atexit, sys
from contractfix.cli import run
atexit.register(lambda: print("exit handler ran", flush=True))
sys.argv = ["contractfix", *sys.argv[1:]]
run()
"""


@pytest.mark.parametrize(("args", "code"), [(["check", "clean.py"], 0), (["check", "step3.py"], 1),
                                            (["check", "missing.py"], 2), (["check", "--bogus"], 2)])
def test_the_script_keeps_exit_codes_output_and_exit_handlers(in_dir: Path, args: list[str], code: int) -> None:
    """`run` (the console script) ends with `os._exit`: the code, the output written and the
    exit handlers must all survive it."""
    shutil.copy(STEP3, "step3.py")
    shutil.copy(CLEAN, "clean.py")
    result = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, check=False, cwd=in_dir)
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stdout.endswith("exit handler ran\n")
    assert ("file(s) scanned" in result.stdout) == (args[1] != "--bogus")
    assert ("No such option" in result.stderr) == (args[1] == "--bogus")


@pytest.mark.parametrize(("args", "collecting"), [(["check", "clean.py"], "False"), (["sweep", "."], "True")])
def test_only_a_sweep_runs_the_script_with_the_cyclic_collector(in_dir: Path, args: list[str], collecting: str) -> None:
    """A check leaves its cycles to the process's end (`run`); a sweep runs the engine once per
    rule, so each run's session must be collected before the next."""
    shutil.copy(CLEAN, "clean.py")
    code = RUN.replace("print(\"exit handler ran\", flush=True)", "print(__import__('gc').isenabled(), flush=True)")
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False, cwd=in_dir)
    assert result.stdout.splitlines()[-1] == collecting, result.stdout + result.stderr


def test_a_profiled_run_still_writes_its_profile(tmp_path: Path) -> None:
    """Under a profiler the script exits as Python does, so the profile gets written."""
    out = tmp_path / "run.prof"
    result = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "contractfix", "version"],
                            capture_output=True, text=True, check=False, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 0
