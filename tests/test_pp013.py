"""PP013: which names a loader counts as handled, and where the modules built on one side come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix import engine
from contractfix.config import Options

HEAD = '''from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import AutoWeightsLoader


class ToyForCausalLM(nn.Module, SupportsPP):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.model(input_ids, positions, intermediate_tensors)


class MixedModel(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        if get_pp_group().is_last_rank:
            self.mixer = StreamMixer(vllm_config)

    def load_weights(self, weights):
'''


def _findings(tmp_path: Path, loader: str):
    path = tmp_path / "toy.py"
    path.write_text(HEAD + loader)
    return engine.check([path], Options(select=("PP013",), cache=False)).findings


@pytest.mark.parametrize("loader", [
    '        return AutoWeightsLoader(self).load_weights(weights)\n',
    '        return AutoWeightsLoader(self, skip_substrs=["mixer.scale"]).load_weights(weights)\n',
    '        return AutoWeightsLoader(self, skip_prefixes=["premixer."]).load_weights(weights)\n',
])
def test_a_loader_that_names_part_of_the_module_or_another_module_is_reported(tmp_path: Path, loader: str) -> None:
    """Qwen4Exp in 1Cat-vLLM before #485 skipped `hyper_connection_mixer.block_inject_weight` only."""
    findings = _findings(tmp_path, loader)
    assert [(f.rule, f.cls, f.line) for f in findings] == [("PP013", "MixedModel", 17)]
    assert "left unset on the other ranks" in findings[0].message


@pytest.mark.parametrize("loader", [
    '        return AutoWeightsLoader(self, skip_prefixes=["mixer."]).load_weights(weights)\n',
    '        return AutoWeightsLoader(self, ignore_unexpected_prefixes=["model.mixer"]).load_weights(weights)\n',
    '        return AutoWeightsLoader(self, skip_prefixes=[f"{self.prefix}.mixer."]).load_weights(weights)\n',
    '        skip = [] if hasattr(self, "mixer") else ["x"]\n'
    '        return AutoWeightsLoader(self, skip_prefixes=skip).load_weights(weights)\n',
    '        skip = [] if self.mixer else ["x"]\n'
    '        return AutoWeightsLoader(self, skip_prefixes=skip).load_weights(weights)\n',
])
def test_a_loader_that_names_the_module_is_not_reported(tmp_path: Path, loader: str) -> None:
    assert _findings(tmp_path, loader) == []


def test_a_class_parsed_for_its_rank_test_alone_is_read(tmp_path: Path) -> None:
    """The model class names no intermediate tensors, no head and no parameter dict: its body is
    parsed because of the rank test (`needs`), in a file the byte test keeps for its forward."""
    path = tmp_path / "toy.py"
    path.write_text(HEAD + '        return AutoWeightsLoader(self).load_weights(weights)\n')
    report = engine.check([path], Options(select=("PP013",), cache=True))
    again = engine.check([path], Options(select=("PP013",), cache=True))
    assert [f.line for f in report.findings] == [f.line for f in again.findings] == [17]
