"""The architectures a release before `SupportsPP` allows PP>1 (`pplist`), and where its registry is."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix.pplist import read_list
from contractfix.registry import find_registry, has_tables


@pytest.mark.parametrize(("source", "expected"), [
    (b'_PP_SUPPORTED_MODELS = [\n    "A",\n    "B",\n]\n', ["A", "B"]),
    (b'from typing import List\n_PP_SUPPORTED_MODELS: List[str] = ("A",)\n', ["A"]),
    (b'_PP_SUPPORTED_MODELS = {"A"}\n', ["A"]),
    (b'X = 1\n', None),
    (b'def f():\n    _PP_SUPPORTED_MODELS = ["A"]\n', None),  # not module-level: not the engine's list
    (b'_PP_SUPPORTED_MODELS = [\n', None),  # mid-edit
])
def test_read_list(source: bytes, expected: list[str] | None) -> None:
    assert read_list(source) == expected


def test_the_old_registry_is_found_only_where_registry_py_is_not(tmp_path: Path) -> None:
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    for folder in (tmp_path / "vllm", tmp_path / "vllm" / "model_executor"):
        (folder / "__init__.py").write_text("")
    (models / "__init__.py").write_text('_MODELS = {**_OTHER_MODELS}\n')
    assert not has_tables(models / "__init__.py") and find_registry(models) is None
    (models / "__init__.py").write_text('_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}\n')
    assert find_registry(models) == models / "__init__.py"
    (models / "registry.py").write_text('_TEXT_GENERATION_MODELS = {}\n')
    assert find_registry(models) == models / "registry.py"
