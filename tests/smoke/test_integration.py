"""The contract tier against real vLLM (the managed smoke environment), on broken and fixed copies
of vLLM's own model files.

Each copy lives in a temp tree shaped like a vLLM checkout (the installed `models/` folder, copied
at test time: no vLLM code is stored in this repo), committed to a throwaway git repo so that the
static tier can check the fix's diff. One `contractfix smoke` run covers every broken copy, and one
every fixed copy: one harness process each.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from cli import app
from codemods.smoke.launch import find_python, probe

pytestmark = pytest.mark.vllm

runner = CliRunner()
BOT = git.Actor("smoke test", "smoke@example.invalid")
MODELS = {"llama": "LlamaForCausalLM", "step3_text": "Step3TextForCausalLM"}
FACTORY_KEYS = '["hidden_states", "residual"], config.hidden_size'
ENTRY_PARAM = "intermediate_tensors: IntermediateTensors | None = None,"


def no_residual(text: str, cls: str) -> str:
    return _once(text, FACTORY_KEYS, '["hidden_states"], config.hidden_size')


def extra_key(text: str, cls: str) -> str:
    return _once(text, FACTORY_KEYS, '["hidden_states", "residual", "aux"], config.hidden_size')


def no_default(text: str, cls: str) -> str:
    """Drop `= None` from the entry class's forward only (inner forwards keep theirs)."""
    start = text.index(f"\nclass {cls}(")
    return text[:start] + _once(text[start:], ENTRY_PARAM, ENTRY_PARAM.replace(" = None", ""), first=True)


def _once(text: str, old: str, new: str, first: bool = False) -> str:
    count = text.count(old)
    assert count == 1 or (first and count >= 1), f"expected {old!r} once in the vLLM file, found {count}"
    return text.replace(old, new, 1)


MUTATIONS = {"no-residual": no_residual, "no-default": no_default, "extra-key": extra_key}
CASES = [(model, mutation) for model in MODELS for mutation in MUTATIONS]


@dataclass
class Copy:
    model: str
    mutation: str
    path: Path
    original: str

    @property
    def arch(self) -> str:
        return MODELS[self.model]


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    python, why = find_python()
    if python is None:
        pytest.skip(f"needs the smoke environment: {why}")
    return python


@pytest.fixture(scope="session")
def copies(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Copy]:
    """One broken copy per (model, mutation), each in its own committed vLLM-shaped tree."""
    installed = probe(vllm_python).vllm_dir
    made = {}
    for model, mutation in CASES:
        root = tmp_path_factory.mktemp(f"{model}-{mutation}")
        models = root / "vllm" / "model_executor" / "models"
        shutil.copytree(installed / "model_executor" / "models", models,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        for package in ("vllm", "vllm/model_executor"):
            shutil.copyfile(installed.parent / package / "__init__.py", root / package / "__init__.py")
        path = models / f"{model}.py"
        original = path.read_text()
        path.write_text(MUTATIONS[mutation](original, MODELS[model]))
        repo = git.Repo.init(root)
        repo.index.add([str(path.relative_to(root))])
        repo.index.commit(f"broken {model}: {mutation}", author=BOT, committer=BOT)
        made[(model, mutation)] = Copy(model, mutation, path, original)
    return made


def _smoke(paths: list[Path], out: Path, *extra: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["smoke", "--tier", "contract", "--json", str(out), *extra, *map(str, paths)])
    assert out.exists(), result.output
    return result.exit_code, json.loads(out.read_text())


@pytest.fixture(scope="session")
def broken(copies, tmp_path_factory) -> tuple[int, dict]:
    out = tmp_path_factory.mktemp("reports") / "broken.json"
    return _smoke([c.path for c in copies.values()], out)


@pytest.fixture(scope="session")
def fixed(copies, broken, tmp_path_factory) -> tuple[int, dict]:
    """`contractfix fix` on every broken copy (after the broken run), then one smoke of them all."""
    for copy in copies.values():
        result = runner.invoke(app, ["fix", str(copy.path)])
        assert result.exit_code == 0, result.output
    out = tmp_path_factory.mktemp("reports") / "fixed.json"
    return _smoke([c.path for c in copies.values()], out, "--allow-skip")


def _records(report: dict, copy: Copy, **match) -> dict[tuple, dict]:
    return {
        (r["tier"], r["check"], r["pp"]): r
        for r in report["records"]
        if r["path"] == str(copy.path) and r["arch"] in (copy.arch, "") and all(r[k] == v for k, v in match.items())
    }


def test_broken_copies_fail_the_smoke(broken) -> None:
    code, report = broken
    assert code == 1 and report["ok"] is False
    assert report["tiers"] == ["static", "contract"]
    assert report["environment"]["vllm"] == "0.33.0" and report["environment"]["contract_device"] == "cpu"


@pytest.mark.parametrize(("model", "mutation"), CASES)
def test_the_right_check_fails_with_the_right_error(model, mutation, copies, broken) -> None:
    copy = copies[(model, mutation)]
    records = _records(broken[1], copy)
    status = {key: r["status"] for key, r in records.items()}
    assert status[("contract", "build", 1)] == "pass"
    assert str(copy.path) in records[("contract", "build", 1)]["reason"], "the changed file is the one that ran"
    assert status[("static", "contract-check", None)] == "fail"
    for pp in (2, 3):
        factory, chain = records[("contract", "factory-keys", pp)], records[("contract", "chain-equals-pp1", pp)]
        if mutation == "no-residual":
            assert factory["status"] == "fail" and "sent, not allocated: ['residual']" in factory["error"]
            assert factory["keys"] == {"allocated": ["hidden_states"], "sent": ["hidden_states", "residual"]}
            assert chain["status"] == "fail" and "rank 1 forward: KeyError: 'residual'" in chain["error"]
            assert f'{copy.path}:' in chain["error"] and 'intermediate_tensors["residual"]' in chain["error"]
        elif mutation == "extra-key":
            assert factory["status"] == "fail" and "allocated, not sent: ['aux']" in factory["error"]
            assert chain["status"] == "fail" and "KeyError: 'aux'" in chain["error"]
        else:
            assert (factory["status"], chain["status"]) == ("pass", "pass")
            assert status[("contract", "keys-read", pp)] == "pass"
    entry = records[("contract", "entry-without-intermediate-tensors", 1)]
    if mutation == "no-default":
        assert entry["status"] == "fail"
        assert "TypeError" in entry["error"] and "intermediate_tensors" in entry["error"]
    else:
        assert entry["status"] == "pass"


def test_fixed_copies_pass(fixed) -> None:
    code, report = fixed
    assert code == 0 and report["ok"] is True, json.dumps(report["records"], indent=1)
    skipped = {(r["arch"], r["check"]) for r in report["records"] if r["status"] == "skip"}
    assert {arch for arch, _ in skipped} <= {"LlamaBidirectionalModel", "LlamaBidirectionalForSequenceClassification"}


@pytest.mark.parametrize(("model", "mutation"), CASES)
def test_each_fixed_copy_passes_every_check_at_pp_2_and_3(model, mutation, copies, fixed) -> None:
    copy = copies[(model, mutation)]
    assert copy.path.read_text() == copy.original, "contractfix fix restored vLLM's own text"
    records = _records(fixed[1], copy)
    expected = {("static", c, None) for c in ("compile", "contract-check", "diff-scope")} | {
        ("contract", c, 1) for c in ("build", "entry-without-intermediate-tensors")} | {
        ("contract", c, pp) for pp in (2, 3) for c in ("factory-keys", "keys-read", "chain-equals-pp1")}
    assert set(records) == expected
    assert {key: r["status"] for key, r in records.items()} == {key: "pass" for key in expected}
    assert records[("contract", "keys-read", 3)]["keys"]["received"] == ["hidden_states", "residual"]
    assert re.search(r"max \|PP chain - PP=1\| = 0\.00e\+00", records[("contract", "chain-equals-pp1", 3)]["reason"])


def test_a_class_that_cannot_be_smoked_is_skipped_with_its_reason(copies, fixed) -> None:
    copy = copies[("llama", "no-residual")]
    bidirectional = [r for r in fixed[1]["records"]
                     if r["path"] == str(copy.path) and r["arch"] == "LlamaBidirectionalModel"]
    assert [(r["check"], r["status"]) for r in bidirectional] == [("build", "skip")]
    assert "the installed module's tiny model fails to build too" in bidirectional[0]["reason"]
