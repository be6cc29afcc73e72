"""Mapping changed files to architectures through a registry read statically."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix.smoke.errors import UsageError
from contractfix.smoke.targets import select_targets

from .fakes import vllm_tree


@pytest.fixture
def models(tmp_path: Path) -> Path:
    return vllm_tree(tmp_path / "checkout")


def _by_arch(targets):
    return {t.arch: t for t in targets}


def test_a_file_maps_to_its_classes_once_each(models: Path) -> None:
    path = models / "tiny_llama.py"
    targets = _by_arch(select_targets([path]))
    assert set(targets) == {"TinyLlamaForCausalLM", "TinyLlamaEmbed"}
    main = targets["TinyLlamaForCausalLM"]
    assert main.module == "vllm.model_executor.models.tiny_llama" and main.cls == "TinyLlamaForCausalLM"
    assert main.aliases == ("TinyAliasForCausalLM", "TinyLlamaModel")
    assert main.path == path.resolve() and not main.skip
    assert main.overrides == (("vllm.model_executor.models.tiny_llama", str(path.resolve())),)


def test_tables_that_cannot_be_smoked_keep_their_reason(models: Path) -> None:
    vision, eagle = select_targets([models / "tiny_vision.py", models / "tiny_eagle.py"])
    assert vision.arch == "TinyVisionForConditionalGeneration" and "multimodal" in vision.skip
    assert eagle.arch == "TinyEagle" and "a draft model with no known target config" in eagle.skip
    assert eagle.draft is None


def test_a_known_draft_head_is_smoked_from_its_target_config(models: Path) -> None:
    (mtp,) = select_targets([models / "tiny_mtp.py"])
    assert (mtp.arch, mtp.cls, mtp.skip) == ("ErnieMTPModel", "TinyMTP", "")
    assert mtp.draft.to_json() == {"target": "Ernie4_5_MoeForCausalLM", "method": "mtp",
                                   "config": {"num_nextn_predict_layers": 1}}


def test_a_file_without_architectures_is_skipped_but_still_loaded_with_its_tree(models: Path) -> None:
    helper, *llama = select_targets([models / "utils.py", models / "tiny_llama.py"])
    assert helper.arch == "" and "no registered architecture is defined in vllm.model_executor.models.utils" in helper.skip
    modules = {m for m, _ in llama[0].overrides}
    assert modules == {"vllm.model_executor.models.utils", "vllm.model_executor.models.tiny_llama"}


def test_arch_picks_one_architecture_even_from_another_module(models: Path) -> None:
    (target,) = select_targets([models / "utils.py"], arch="StepLiteForCausalLM")
    assert target.module == "vllm.model_executor.models.step_lite"
    assert target.path is None, "step_lite itself is not changed"
    assert target.overrides == (("vllm.model_executor.models.utils", str((models / "utils.py").resolve())),)
    (unknown,) = select_targets([models / "utils.py"], arch="NoSuchForCausalLM")
    assert "NoSuchForCausalLM is not registered" in unknown.skip


def test_arch_alone_uses_the_installed_registry(models: Path) -> None:
    (target,) = select_targets([], arch="TinyAliasForCausalLM", installed=models / "registry.py")
    assert (target.arch, target.cls, target.path, target.overrides) == (
        "TinyAliasForCausalLM", "TinyLlamaForCausalLM", None, ())
    with pytest.raises(UsageError, match="not in the installed"):
        select_targets([], arch="Nope", installed=models / "registry.py")
    with pytest.raises(UsageError, match="--arch"):
        select_targets([])


def test_a_lone_file_stands_in_for_the_installed_module_of_its_name(models: Path, tmp_path: Path) -> None:
    lone = tmp_path / "elsewhere" / "step_lite.py"
    lone.parent.mkdir()
    lone.write_text("# edited copy\n")
    (target,) = select_targets([lone], installed=models / "registry.py")
    assert target.arch == "StepLiteForCausalLM" and target.path == lone.resolve()
    assert "stands in for the installed vllm.model_executor.models.step_lite" in target.notes[0]
    (orphan,) = select_targets([lone], installed=None)
    assert "no installed vLLM" in orphan.skip


def test_copies_in_two_trees_are_separate_units(models: Path, tmp_path: Path) -> None:
    other = vllm_tree(tmp_path / "second")
    first, second = select_targets([models / "step_lite.py", other / "step_lite.py"])
    assert first.arch == second.arch == "StepLiteForCausalLM"
    assert first.overrides != second.overrides
