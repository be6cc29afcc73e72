"""action.yml and the example workflows (sweep, code scanning): valid against SchemaStore's schemas (vendored by
check-jsonschema; actionlint too where it is on PATH), consistent with the CLI, and the action's run
step doing what each mode says when bash runs it the way a runner does."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml

from contractfix.cli import app
from contractfix.demo import copy_example
from tests.conftest import ROOT

ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / "examples" / "workflows" / "contractfix-sweep.yml"
SCANNING = ROOT / "examples" / "workflows" / "contractfix-code-scanning.yml"
COMMANDS = typer.main.get_command(app).commands
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text("utf-8"))


def action_step(name: str) -> dict:
    return next(s for s in load(ACTION)["runs"]["steps"] if s.get("name") == name)


def parse(command: str, args: list[str]):
    """Parse `args` as the CLI would for `command` (unknown options and bad values raise)."""
    return COMMANDS[command].make_context(command, list(args))


@pytest.mark.parametrize(
    ("path", "schema"),
    [(ACTION, "vendor.github-actions"), (WORKFLOW, "vendor.github-workflows"), (SCANNING, "vendor.github-workflows")],
)
def test_yaml_matches_the_schemastore_schema(path: Path, schema: str) -> None:
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not on PATH")
@pytest.mark.parametrize("path", [WORKFLOW, SCANNING])
def test_actionlint_accepts_the_workflow(path: Path) -> None:
    result = subprocess.run(["actionlint", "-no-color", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_scanning_uploads_the_sarif_file_even_when_the_check_fails() -> None:
    """The check exits 1 on findings; a step without `always()` would be skipped and upload nothing."""
    steps = {s.get("name"): s for s in load(SCANNING)["jobs"]["check"]["steps"]}
    program, *args, redirect, sarif_file = shlex.split(steps["Check"]["run"])
    assert (program, redirect) == ("contractfix", ">")
    assert parse("check", args).params["format"] == "sarif"
    upload = steps["Upload SARIF"]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@") and upload["with"]["sarif_file"] == sarif_file
    assert upload["if"].startswith("always()")
    assert load(SCANNING)["permissions"]["security-events"] == "write"


def test_inputs_are_declared_used_and_passed_through_the_environment() -> None:
    action = load(ACTION)
    text = ACTION.read_text("utf-8")
    used = set(re.findall(r"\binputs\.([A-Za-z0-9_-]+)", text))
    assert used == set(action["inputs"])
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), f"{step['name']}: an expression inside a script is an injection risk"
        assert "run" not in step or step["shell"] == "bash"
    assert "exit-code" in action["outputs"]


def test_action_flags_exist_in_the_cli() -> None:
    script = action_step("Run contractfix")["run"]
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", script))
    options = {o for name in ("check", "sweep") for p in COMMANDS[name].params for o in p.opts}
    assert flags and flags <= options, flags - options
    parse("check", ["--format", load(ACTION)["inputs"]["format"]["default"]])


@pytest.fixture
def runner(tmp_path: Path):
    """Run the action's `Run contractfix` step with bash: its env from `inputs` (defaults first),
    a fake RUNNER_TEMP whose venv holds `contractfix` (this checkout's unless `fake` is given)."""

    def run(inputs: dict[str, str], fake: str | None = None, cwd: Path = tmp_path):
        step = action_step("Run contractfix")
        declared = {k: str(v.get("default", "")) for k, v in load(ACTION)["inputs"].items()}
        values = {**declared, **inputs}
        env = {k: EXPRESSION.sub(lambda m: values[m.group(1).removeprefix("inputs.")], str(v)) for k, v in step["env"].items()}
        temp = tmp_path / "runner-temp"
        binary = temp / "contractfix-venv" / "bin" / "contractfix"
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text(fake or f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m contractfix "$@"\n')
        binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
        output = tmp_path / "github-output"
        output.write_text("")
        full = {**os.environ, **env, "RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(output)}
        script = tmp_path / "step.sh"
        script.write_text(step["run"])
        command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]  # as `shell: bash` runs it
        result = subprocess.run(command, cwd=cwd, env=full, capture_output=True, text=True)
        return result, output.read_text()

    return run


RECORD = '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\nexit 1\n'


def test_check_mode_passes_format_args_and_paths(runner) -> None:
    result, output = runner({"paths": "vllm/a.py vllm/b", "args": "--select PP001 --statistics"}, fake=RECORD)
    argv = result.stdout.splitlines()
    assert argv == ["check", "--format", "github", "--select", "PP001", "--statistics", "vllm/a.py", "vllm/b"]
    parse("check", argv[1:])
    assert result.returncode == 1 and output == "exit-code=1\n"


def test_check_mode_writes_the_output_file(runner, tmp_path: Path) -> None:
    result, _ = runner({"format": "sarif", "output": "out.sarif"}, fake=RECORD)
    assert result.stdout == ""
    assert (tmp_path / "out.sarif").read_text().splitlines() == ["check", "--format", "sarif", "."]


def test_sweep_mode_builds_the_sweep_command(runner) -> None:
    result, output = runner({"mode": "sweep", "args": "--unsafe-fixes"}, fake=RECORD)
    argv = result.stdout.splitlines()
    assert argv[:1] == ["sweep"] and argv[-1] == "--unsafe-fixes"
    context = parse("sweep", argv[1:])
    assert context.params["push"] == "origin" and context.params["open_pr"] is True
    assert context.params["author"].startswith("github-actions[bot] <")
    assert context.params["branch"] == "contractfix/pp-contracts" and context.params["base"] == "HEAD"
    assert output == "exit-code=1\n"


def test_sweep_mode_without_push_or_pr(runner) -> None:
    result, _ = runner({"mode": "sweep", "push": "", "open-pr": "false"}, fake=RECORD)
    context = parse("sweep", result.stdout.splitlines()[1:])
    assert context.params["push"] is None and context.params["open_pr"] is False


def test_unknown_mode_is_an_error(runner) -> None:
    result, output = runner({"mode": "fix"}, fake=RECORD)
    assert result.returncode == 2 and output == "exit-code=2\n"
    assert result.stdout.startswith("::error title=contractfix::mode must be check or sweep")


def test_check_mode_annotates_a_real_tree(runner, tmp_path: Path) -> None:
    copy_example(tmp_path / "repo")
    result, output = runner({"paths": "."}, cwd=tmp_path / "repo")
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::error file=vllm/")]
    assert annotations and result.returncode == 1 and output == "exit-code=1\n"


def test_sweep_workflow_runs_the_bot() -> None:
    workflow = load(WORKFLOW)
    triggers = workflow.get("on", workflow.get(True))
    (cron,) = [entry["cron"] for entry in triggers["schedule"]]
    assert len(cron.split()) == 5 and "workflow_dispatch" in triggers
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}
    (job,) = workflow["jobs"].values()
    (sweep,) = [s for s in job["steps"] if "contractfix sweep" in s.get("run", "")]
    argv = shlex.split(sweep["run"])
    assert argv[:2] == ["contractfix", "sweep"]
    context = parse("sweep", argv[2:])
    assert context.params["push"] == "origin" and context.params["open_pr"] is True and context.params["author"]
    assert EXPRESSION.fullmatch(sweep["env"]["GH_TOKEN"])
