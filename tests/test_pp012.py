"""PP012: which None values a non-last rank sends, and the ones it only seems to send."""

from __future__ import annotations

import ast
from pathlib import Path

from contractfix import engine
from contractfix.config import Options
from contractfix.families.pp.facts.valueguards import config_names, normalized

HEAD = '''from itertools import islice

from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.sequence import IntermediateTensors


class ToyForCausalLM(nn.Module, SupportsPP):
    pass


'''


def _findings(tmp_path: Path, body: str):
    path = tmp_path / "toy.py"
    path.write_text(HEAD + body)
    return engine.check([path], Options(select=("PP012",), cache=False)).findings


def test_none_replaced_under_a_data_test_is_not_reported(tmp_path: Path) -> None:
    """DeepseekV4Model (0.31.0): a capture set when `idx + 1 in aux` and read when `end_layer in
    aux`; the two tests agree, so the None never reaches the send."""
    body = '''class CapturedModel(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        hidden_states = input_ids
        captured = None
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
            hidden_states = layer(positions, hidden_states)
            if idx + 1 in self.aux_hidden_state_layers:
                captured = hidden_states
        if self.end_layer in self.aux_hidden_state_layers:
            hidden_states = captured
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states
'''
    assert _findings(tmp_path, body) == []


def test_none_left_by_a_rank_branch_is_reported(tmp_path: Path) -> None:
    """GraniteModel (0.10.1.1): the first rank's residual stays None and is sent."""
    body = '''class FirstRankModel(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = input_ids
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states = layer(positions, hidden_states)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states
'''
    assert [(f.cls, f.keys, f.fix) for f in _findings(tmp_path, body)] == [("FirstRankModel", ("residual",), None)]


def test_layer_returning_none_elsewhere_in_its_tuple_is_not_reported(tmp_path: Path) -> None:
    body = '''class Layer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        return None, hidden_states


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(3, lambda prefix: Layer(), prefix="layers")

    def forward(self, input_ids, positions, intermediate_tensors=None):
        hidden_states, residual = input_ids, None
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"residual": residual})
        return hidden_states
'''
    assert _findings(tmp_path, body) == []
    flipped = body.replace('{"residual": residual}', '{"hidden_states": hidden_states}')
    assert [f.keys for f in _findings(tmp_path, flipped)] == [("hidden_states",)]


def test_layer_class_a_subclass_hands_its_base(tmp_path: Path) -> None:
    """A subclass that runs its base's forward hands the base's `__init__` a layer class that
    returns None where the base unpacks the residual (vLLM's LlamaModel subclasses hand it
    `layer_type` this way): reported at the base's send, naming the subclass."""
    body = '''class ResidualDecoderLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        return hidden_states, hidden_states if residual is None else residual


class ParallelDecoderLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        return hidden_states + self.mlp(hidden_states), None


class BaseModel(nn.Module):
    def __init__(self, *, vllm_config, prefix="", layer_type=ResidualDecoderLayer):
        super().__init__()
        self.layers = nn.ModuleList([layer_type(vllm_config) for _ in range(4)])

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = input_ids, None
        else:
            hidden_states, residual = intermediate_tensors["hidden_states"], intermediate_tensors["residual"]
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states


class ParallelModel(BaseModel):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix, layer_type=ParallelDecoderLayer)


class ParallelForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = ParallelModel(vllm_config=vllm_config, prefix=prefix)
'''
    found = _findings(tmp_path, body)
    assert [(f.cls, f.keys) for f in found] == [("BaseModel", ("residual",))]
    assert "the layers ParallelModel hands BaseModel" in found[0].message
    assert _findings(tmp_path, body.replace("layer_type=ParallelDecoderLayer", "layer_type=ResidualDecoderLayer")) == []


def test_guards_name_the_model_config_in_one_way() -> None:
    """The layer's `self.flag` (set from `config.flag`) and the model's `self.config.flag` or
    `vllm_config.model_config.hf_config.flag` are the same condition."""
    layer = ast.parse("class L:\n    def __init__(self, config):\n        self.flag = config.flag\n").body[0]
    assert isinstance(layer, ast.ClassDef)
    names = config_names(layer)
    assert normalized((("self.flag", False),), names) == (("config.flag", False),)
    assert normalized((("self.config.flag", True),), {"config": "config"}) == (("config.flag", True),)
    assert normalized((("vllm_config.model_config.hf_config.flag", True),), {}) == (("config.flag", True),)
    assert normalized((("self.quant_config.flag", True),), {}) == (("self.quant_config.flag", True),)


def test_a_none_under_one_flag_sent_under_its_negation_is_not_reported(tmp_path: Path) -> None:
    body = '''class FlagLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        if self.config.fused:
            return hidden_states, residual
        return hidden_states, None


class FlagModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(3, lambda prefix: FlagLayer(), prefix="layers")

    def forward(self, input_ids, positions, intermediate_tensors=None):
        hidden_states, residual = input_ids, None
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states, residual = layer(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            if not self.config.fused:
                return IntermediateTensors({"hidden_states": hidden_states})
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return hidden_states
'''
    assert _findings(tmp_path, body) == []
    flipped = body.replace("if not self.config.fused:", "if self.config.fused:")
    assert [f.cls for f in _findings(tmp_path, flipped)] == ["FlagModel"]
