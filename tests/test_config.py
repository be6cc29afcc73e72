"""Configuration and rule selection never fail silently: typos, wrong types and bad TOML are
one-line errors naming the file (exit 2, nothing checked or written); codes are case-insensitive."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix import config
from contractfix.cli import app
from tests.conftest import ROOT

runner = CliRunner()
STEP3 = ROOT / "tests" / "fixtures" / "PP001" / "step3_style.py"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def one_error(result, *words: str) -> None:
    """Exit 2 with one `error:` line holding `words`, and nothing reported."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for word in words:
        assert word in lines[0], result.output


@pytest.mark.parametrize("selector", ["PP0X", "X999", "PP1000", "", "P P"])
def test_unknown_codes_and_prefixes_are_errors(in_dir: Path, selector: str) -> None:
    shutil.copy(STEP3, "step3.py")
    for option in ("--select", "--ignore"):
        result = invoke("check", "step3.py", option, selector + ",PP001" if not selector else selector)
        if selector:
            one_error(result, repr(selector))


def test_did_you_mean_for_a_code(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    one_error(invoke("check", "step3.py", "--select", "PP0001"), "did you mean PP001")


def test_all_and_lowercase_codes_select(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    for selector in ("ALL", "all", "pp001", "pp0", "Pp"):
        assert invoke("check", "step3.py", "--select", selector).exit_code == 1, selector
    assert invoke("check", "step3.py", "--select", "all", "--ignore", "pp001").exit_code == 0
    Path("pyproject.toml").write_text('[tool.contractfix]\nselect = ["pp001"]\n')
    assert invoke("check", "step3.py").exit_code == 1
    Path("pyproject.toml").write_text('[tool.contractfix]\nignore = ["all"]\n')
    assert invoke("check", "step3.py").exit_code == 0


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ('select = ["PP0X"]', ["pyproject.toml", "`select`", "'PP0X'"]),
        ('ignore = "PP001"', ["pyproject.toml", "`ignore` must be a list of strings", "a string"]),
        ('unsafe-fixes = "false"', ["`unsafe-fixes` must be true or false", "a string"]),
        ("registry = 5", ["`registry` must be a list of strings", "a number"]),
        ("exclude = 5", ["`exclude` must be a list"]),
        ("select = [1, 2]", ["`select` must be a list of strings"]),
        ('pp002-scope = "everything"', ["`pp002-scope` must be one of entry, all"]),
        ('slect = ["PP001"]', ["unknown key `slect`", "did you mean `select`"]),
        ('per-file-ignores = ["x"]', ["`per-file-ignores` must be a table"]),
        ('per-file-ignores = {"a/*" = "PP001"}', ["`per-file-ignores.a/*` must be a list of strings"]),
    ],
)
def test_wrong_config_values_are_one_line_errors(in_dir: Path, table: str, words: list[str]) -> None:
    shutil.copy(STEP3, "step3.py")
    Path("pyproject.toml").write_text(f"[tool.contractfix]\n{table}\n")
    before = Path("step3.py").read_bytes()
    for command in ("check", "fix"):
        one_error(invoke(command, "step3.py"), *words)
    assert Path("step3.py").read_bytes() == before


def test_tool_of_the_wrong_type_is_an_error(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    Path("pyproject.toml").write_text('tool = 5\n[project]\nname = "contractfix-user"\n')
    one_error(invoke("check", "step3.py"), "pyproject.toml", "`tool` must be a table")
    Path("pyproject.toml").write_text("[tool]\ncontractfix = 5\n")
    one_error(invoke("check", "step3.py"), "`tool.contractfix` must be a table")


def test_malformed_toml_names_the_file_and_line(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    Path("pyproject.toml").write_text('[tool.contractfix]\nignore = ["PP001"\nselect = 3\n')
    one_error(invoke("check", "step3.py"), "pyproject.toml", "invalid TOML", "line 3")


def test_malformed_toml_of_another_tool_is_not_ours(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    Path("pyproject.toml").write_text("[tool.black\n")
    assert invoke("check", "step3.py").exit_code == 1


def test_sweep_reports_a_wrong_config_value_in_one_line(repo, monkeypatch) -> None:
    repo = Path(repo.working_tree_dir)
    (repo / "pyproject.toml").write_text("[tool.contractfix]\nregistry = 5\n")
    for args in (["add", "-A"], ["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "config"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    monkeypatch.chdir(repo)
    one_error(invoke("sweep"), "pyproject.toml", "`registry` must be a list of strings")
    branches = subprocess.run(["git", "branch"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert "contractfix/" not in branches


def test_registry_that_does_not_exist_is_an_error(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    one_error(invoke("check", "step3.py", "--registry", "nope/registry.py"), "nope/registry.py")


def test_config_file_and_isolated(in_dir: Path) -> None:
    shutil.copy(STEP3, "step3.py")
    Path("pyproject.toml").write_text('[tool.contractfix]\nignore = ["PP001"]\n')
    assert invoke("check", "step3.py").exit_code == 0
    assert invoke("check", "step3.py", "--isolated").exit_code == 1
    Path("strict.toml").write_text('select = ["ALL"]\n')
    assert invoke("check", "step3.py", "--config", "strict.toml").exit_code == 1
    one_error(invoke("check", "step3.py", "--config", "missing.toml"), "missing.toml")
    Path("bad.toml").write_text("ignre = []\n")
    one_error(invoke("check", "step3.py", "--config", "bad.toml"), "bad.toml", "did you mean `ignore`")


def test_show_settings_says_where_each_value_came_from(in_dir: Path) -> None:
    Path("pyproject.toml").write_text('[tool.contractfix]\nignore = ["pp005"]\nexclude = ["gen/*"]\n')
    result = invoke("check", ".", "--show-settings", "--select", "PP0")
    assert result.exit_code == 0
    lines = {line.split(" = ")[0]: line for line in result.output.splitlines()}
    assert lines["ignore"].endswith("pyproject.toml") and "'PP005'" in lines["ignore"]
    assert lines["select"].endswith("# command line") and "'PP0'" in lines["select"]
    assert lines["pp002-scope"] == "pp002-scope = entry  # default"
    assert "gen/*" in lines["exclude"] and str(in_dir.resolve()) in lines["exclude"]


def test_exclude_is_anchored_at_the_config_folder(tmp_path: Path, monkeypatch) -> None:
    """Issue 11 item 22: the same files whatever way the path is given, even under a folder
    whose name the glob also matches."""
    project = tmp_path / "tests" / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pkg").mkdir()
    shutil.copy(STEP3, project / "tests" / "step3.py")
    shutil.copy(STEP3, project / "pkg" / "step3.py")
    (project / "pyproject.toml").write_text('[tool.contractfix]\nexclude = ["tests/*"]\n')
    monkeypatch.chdir(project)
    for given in (".", str(project), "pkg/..", str(project / "pkg")):
        result = invoke("check", given, "--format", "json")
        assert '"files_scanned": 1' in result.output and "tests/step3.py" not in result.output, given
    monkeypatch.chdir(project / "pkg")
    assert '"files_scanned": 1' in invoke("check", "..", "--format", "json").output


def test_per_file_ignores(in_dir: Path) -> None:
    Path("models").mkdir()
    shutil.copy(STEP3, "models/step3.py")
    shutil.copy(STEP3, "step3.py")
    Path("pyproject.toml").write_text('[tool.contractfix.per-file-ignores]\n"models/*" = ["pp001"]\n')
    result = invoke("check", ".", "--format", "json")
    assert '"path": "step3.py"' in result.output and "models/step3.py" not in result.output
    invoke("fix", ".")
    assert Path("models/step3.py").read_bytes() == STEP3.read_bytes()
    assert Path("step3.py").read_bytes() != STEP3.read_bytes()


def test_gitignored_files_are_skipped_in_a_git_repo(in_dir: Path) -> None:
    subprocess.run(["git", "init", "-q"], check=True)
    Path("build").mkdir()
    shutil.copy(STEP3, "build/step3.py")
    shutil.copy(STEP3, "step3.py")
    Path(".gitignore").write_text("build/\n")
    result = invoke("check", ".", "--format", "json")
    assert '"files_scanned": 1' in result.output and "build/" not in result.output
    assert invoke("check", "build/step3.py").exit_code == 1, "a file named on the command line is checked"


def test_keys_table_is_the_single_place_to_add_a_key() -> None:
    assert set(config.KEYS) == {"select", "ignore", "exclude", "per-file-ignores", "pp002-scope", "registry", "extra-path", "unsafe-fixes",
                                "warnings-as-errors"}
    names = {f for f in config.Options.__dataclass_fields__}
    assert all(name in names for name, _ in config.KEYS.values())
