"""Counter-examples found by the property and mutation tests, on our own code: the fixed ones as
plain tests, the open ones as strict expected failures (so that their fix shows up)."""

from __future__ import annotations

import pytest

from tests.property import workspace
from tests.property.modelgen import (
    Family,
    KeyList,
    Module,
    Param,
    Signature,
    Tree,
    Violation,
    render,
)

MODELS = "vllm/model_executor/models"

DRAFT_HEAD = '''\
import torch
from torch import nn

from vllm.sequence import IntermediateTensors


class TinyMTP(nn.Module):
    def forward(
        self,
        input_ids: torch.Tensor | None,
        positions: torch.Tensor,
        hidden_states: torch.Tensor,
        intermediate_tensors: IntermediateTensors | None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return hidden_states
'''

REGISTRY = '''\
_SPECULATIVE_DECODING_MODELS = {
    "TinyMTPModel": ("tiny_mtp", "TinyMTP"),
}
'''


def test_draft_head_forward_needs_a_none_default() -> None:
    files = {
        "vllm/__init__.py": "",
        "vllm/model_executor/__init__.py": "",
        f"{MODELS}/__init__.py": "",
        f"{MODELS}/registry.py": REGISTRY,
        f"{MODELS}/tiny_mtp.py": DRAFT_HEAD,
    }
    with workspace.on_disk(files) as root:
        report = workspace.check(root)
    assert [(f.rule, f.cls) for f in report.findings] == [("PP002", "TinyMTP")]


def _conditional_family() -> Family:
    it = Param("intermediate_tensors", "IntermediateTensors | None", "None")
    sig = Signature((Param("input_ids", "torch.Tensor"), Param("positions", "torch.Tensor"), it))
    return Family(
        stem="alpha", keys=("hidden_states",), reads=("hidden_states",), read_style="subscript",
        producer="factory", keylist=KeyList(), conditional="residual", inner_sig=sig, wrapper_sig=sig,
        split=False, wrapper_base=False, relative_import=False, guarded_output=False,
    )


@pytest.mark.xfail(
    strict=True,
    reason="PP001 proves that the `if self.use_residual:` branch's factory lacks \"residual\" (sent "
    "under the same condition) but never fixes a factory assigned in if/else branches; adding the "
    "key to that branch's literal list would. Found by the mutation round-trip (vllm/models/hy_v4).",
)
def test_per_branch_missing_key_is_fixed_in_its_branch() -> None:
    tree = Tree((_conditional_family(),), Module(), registry=False)
    broken = render(tree, Violation(0, "drop_conditional_key", "PP001", frozenset({"AlphaModel"}), True, True))
    with workspace.on_disk(broken) as root:
        workspace.fix(root)
        assert workspace.read_back(root, broken) == render(tree)


def _findings(source: str) -> list:
    """`check` findings for a tree holding `source` as its only model file."""
    with workspace.on_disk({f"{MODELS}/model.py": source}) as root:
        return workspace.check(root).findings


HEADER = '''\
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory
from vllm.sequence import IntermediateTensors
'''

AUX_PACKING = HEADER + '''

class AuxModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states", "residual", "unused_buffer"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = self.embed(input_ids), None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        aux_hidden_states = self.collect_remote_aux_hidden_states(intermediate_tensors)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors(
                {
                    "hidden_states": hidden_states,
                    "residual": residual,
                    **self.pack_local_aux_hidden_states(aux_hidden_states),
                }
            )
        return hidden_states
'''

SILENT_SENDER = HEADER + '''

class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states", "unused_buffer"], config.hidden_size
        )

    def forward(self, hidden_states, position_ids):
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states


class GlmModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.encoder = Encoder(config)
        self.make_empty_intermediate_tensors = self.encoder.make_empty_intermediate_tensors

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed(input_ids)
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        return self.encoder(hidden_states, positions)
'''


def test_unsent_key_is_found_beside_aux_packing() -> None:
    """Aux keys packed by `**self.pack_local_aux_hidden_states(...)` are the runtime family, not
    unknown keys (found by the mutation round-trip on llama.py, qwen2.py, sarvam.py, minimax_m3)."""
    assert [(f.rule, f.keys, bool(f.fix)) for f in _findings(AUX_PACKING)] == [("PP003", ("unused_buffer",), True)]


@pytest.mark.xfail(
    strict=True,
    reason="the factory's class sends from a forward that does not take intermediate_tensors (the "
    "wrapper reads them and calls it with hidden states); traffic follows only calls that pass "
    "intermediate_tensors, so its sends are invisible and PP003 stays silent. Found by the "
    "mutation round-trip (chatglm.py GLMTransformer).",
)
def test_unsent_key_is_found_when_the_sender_does_not_receive() -> None:
    assert [(f.rule, f.keys, bool(f.fix)) for f in _findings(SILENT_SENDER)] == [("PP003", ("unused_buffer",), True)]


SKIPPED_SUPER_INIT = HEADER + '''from vllm.model_executor.models.interfaces import SupportsPP


class TextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": self.embed(input_ids)})
        return self.embed(input_ids)


class BaseVLM(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        self.language_model = TextModel(config)
        self.make_empty_intermediate_tensors = self.language_model.make_empty_intermediate_tensors

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.language_model(input_ids, positions, intermediate_tensors)


class OcrVLM(BaseVLM):
    def __init__(self, config):
        nn.Module.__init__(self)
        self.language_model = TextModel(config)
'''


@pytest.mark.xfail(
    strict=True,
    reason="an attribute assigned in a base's __init__ counts as the subclass's producer even when the "
    "subclass overrides __init__ without calling it (`nn.Module.__init__(self)`), so a missing "
    "delegation goes unreported. Found by the mutation round-trip (lightonocr.py, whose base is "
    "Mistral3ForConditionalGeneration).",
)
def test_delegation_of_a_base_init_that_never_runs_is_missing() -> None:
    assert [(f.rule, f.cls) for f in _findings(SKIPPED_SUPER_INIT)] == [("PP004", "OcrVLM")]
