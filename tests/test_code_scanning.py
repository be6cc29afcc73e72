"""What GitHub sees: SARIF and annotation paths relative to the repository root wherever contractfix
ran, each rule's helpUri pointing at its README section, and the job summary listing every finding
(GitHub shows only 10 error annotations of a step)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix.cli import app
from contractfix.demo import copy_example
from contractfix.findings import Applicability, FileError, Finding, Fix, Report
from contractfix.report import github, sarif
from contractfix.rules import ALL
from tests.conftest import ROOT


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository holding the demo tree under sub/demo; the test runs from sub/."""
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    copy_example(tmp_path / "repo" / "sub" / "demo")
    monkeypatch.chdir(tmp_path / "repo" / "sub")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path / "repo"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout


def test_sarif_uris_are_relative_to_the_repository_root(repo: Path) -> None:
    code, out = run("check", "--format", "sarif", "demo")
    (result_run,) = json.loads(out)["runs"]
    assert code == 1 and result_run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in result_run["results"]]
    assert locations and all(loc["uriBaseId"] == "%SRCROOT%" for loc in locations)
    assert all(loc["uri"].startswith("sub/demo/vllm/") and (repo / loc["uri"]).is_file() for loc in locations)


def test_sarif_fingerprints_do_not_depend_on_the_directory_run_from(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fingerprints() -> list[str]:
        doc = json.loads(run("check", "--format", "sarif", str(repo / "sub" / "demo"))[1])
        return [r["partialFingerprints"]["contractfix/v1"] for r in doc["runs"][0]["results"]]

    from_sub = fingerprints()
    monkeypatch.chdir(repo)
    assert from_sub and fingerprints() == from_sub


def test_outside_a_repository_the_base_is_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_example(tmp_path / "demo")
    monkeypatch.chdir(tmp_path)
    doc = json.loads(run("check", "--format", "sarif", "demo")[1])
    assert doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_every_rule_links_its_page() -> None:
    homepage = re.search(r'^Homepage = "(.+)"$', (ROOT / "pyproject.toml").read_text("utf-8"), re.M).group(1)
    rules = {r["id"]: r for r in sarif.document(Report())["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == set(ALL)
    for code, rule in rules.items():
        page = rule["helpUri"].removeprefix(f"{homepage}/blob/main/")
        assert page == f"docs/rules/{code}.md" and (ROOT / page).read_text("utf-8").startswith(f"# {code} ")


def test_github_annotations_name_files_from_the_repository_root(repo: Path) -> None:
    code, out = run("check", "--format", "github", "demo")
    files = re.findall(r"^::error file=([^,]+),", out, re.M)
    assert code == 1 and files and all(f.startswith("sub/demo/vllm/") and (repo / f).is_file() for f in files)


def test_the_step_summary_lists_every_finding(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = repo.parent / "summary.md"
    summary.write_text("earlier step\n", "utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    findings = json.loads(run("check", "--format", "json", "demo")[1])["findings"]
    code, _ = run("check", "--format", "github", "demo")
    text = summary.read_text("utf-8")
    assert code == 1 and text.startswith("earlier step\n### contractfix check\n")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(findings)
    for row, finding in zip(rows, findings, strict=True):
        assert row.startswith(f"| `sub/{finding['path']}:{finding['line']}:{finding['column']}` | [{finding['rule']}](")


def test_no_summary_file_without_the_variable(repo: Path) -> None:
    run("check", "--format", "github", "demo")
    run("check", "--format", "sarif", "demo")
    assert not list(repo.parent.glob("*.md"))


def test_the_step_summary_escapes_table_cells_and_stays_under_githubs_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    odd = Finding("PP001", "key-not-allocated", Path("a|b.py"), 3, 0, "M", "one | two\nthree", keys=("k",),
                  fix=Fix(Applicability.SAFE, "add `x | y`", ()))
    text = github.step_summary(Report(findings=[odd], errors=[FileError(Path("c.py"), "cannot read")], files_scanned=2))
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `a\\|b.py:3:1` |") and "one \\| two<br>three (M)" in rows[0] and "add `x \\| y`" in rows[0]
    assert rows[1] == "| `c.py` | error | cannot read |  |"
    many = Report(findings=[odd] * 20000, files_scanned=1)
    text = github.step_summary(many)
    assert len(text.encode()) <= github.SUMMARY_LIMIT and re.search(r"\.\.\. and \d+ more", text)
