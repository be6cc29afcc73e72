"""The command line through Typer's runner: exit codes, formats, options, config, demo."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix.cli import app
from contractfix.demo import copy_example
from contractfix.rules import ALL
from contractfix.rules.docs import markdown_table
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
    assert doc["summary"] == {"files_scanned": 2, "findings": 1, "fixable": 1}


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
    assert invoke("check", ".", "--select", "PP001", "--ignore", "PP999").exit_code == 1
    Path("pyproject.toml").write_text('[tool.contractfix]\npp002-scope = "everything"\n')
    result = invoke("check", ".")
    assert result.exit_code == 2 and "pp002-scope" in result.output


def test_pp002_scope_all(in_dir: Path) -> None:
    shutil.copy(ROOT / "tests" / "fixtures" / "PP002" / "not_entries.py", "inner.py")
    assert invoke("check", "inner.py", "--select", "PP002").exit_code == 0
    result = invoke("check", "inner.py", "--select", "PP002", "--pp002-scope", "all")
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


def test_readme_rule_section_is_generated_from_metadata() -> None:
    section = invoke("rules", "--markdown").output
    assert markdown_table(ALL.values()) in section
    assert section in (ROOT / "README.md").read_text(), "refresh README: contractfix rules --markdown"


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


def test_text_colours_only_on_a_terminal_without_no_color(in_dir: Path) -> None:
    from contractfix import cliutil, engine
    from contractfix.config import Options
    from contractfix.report import color

    class Terminal:
        def isatty(self) -> bool:
            return True

    assert color.wanted(Terminal(), {}) is True
    assert color.wanted(Terminal(), {"NO_COLOR": "1"}) is False
    assert color.wanted(io.StringIO(), {}) is False
    shutil.copy(STEP3, "step3.py")
    report = engine.check([Path("step3.py")], Options())
    plain = cliutil.render(report, "text", False, "check")
    coloured = cliutil.render(report, "text", False, "check", color=True)
    assert "\x1b[" not in plain and "\x1b[1;31mPP001\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
    assert "\x1b[" not in cliutil.render(report, "json", False, "check", color=True)
    assert "\x1b[" not in invoke("check", "step3.py").output
