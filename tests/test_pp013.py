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


def test_a_class_without_a_loader_is_checked_against_the_loader_of_the_model_that_imports_it(tmp_path: Path) -> None:
    """`AutoWeightsLoader` walks the children of a child without `load_weights` itself: the
    model's loader must skip `<attr>.<module>.` where the module is not built."""
    package = tmp_path / "toymodels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tassel.py").write_text(
        "from vllm.distributed import get_pp_group\n"
        "\n"
        "\n"
        "class Tassel(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        if get_pp_group().is_last_rank:\n"
        "            self.fringe = StreamPooler(config.hidden_size)\n"
        "\n"
        "    def forward(self, hidden_states, intermediate_tensors=None):\n"
        "        ...\n"
    )
    model = (
        "from vllm.model_executor.models.interfaces import SupportsPP\n"
        "from vllm.model_executor.models.utils import AutoWeightsLoader\n"
        "{import_line}"
        "\n"
        "\n"
        "class TasselForCausalLM(nn.Module, SupportsPP):\n"
        "    def __init__(self, *, vllm_config, prefix=\"\"):\n"
        "        super().__init__()\n"
        "        self.head = Tassel(vllm_config.model_config.hf_config)\n"
        "\n"
        "    def forward(self, input_ids, positions, intermediate_tensors=None):\n"
        "        ...\n"
        "\n"
        "    def load_weights(self, weights):\n"
        "        return AutoWeightsLoader(self, skip_prefixes={skips}).load_weights(weights)\n"
    )
    options = Options(select=("PP013",), cache=False)
    (package / "model.py").write_text(model.format(import_line="from toymodels.tassel import Tassel\n", skips='["lm_head."]'))
    findings = engine.check([package], options).findings
    assert [(f.cls, f.line) for f in findings] == [("Tassel", 8)]
    assert "`head.fringe.*` weights (Tassel has no `load_weights` of its own)" in findings[0].message
    (package / "model.py").write_text(model.format(import_line="from toymodels.tassel import Tassel\n", skips='["head.fringe."]'))
    assert engine.check([package], options).findings == []
    (package / "model.py").write_text(model.format(import_line="", skips='["lm_head."]'))
    assert engine.check([package], options).findings == []
