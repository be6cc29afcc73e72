"""Counter-examples found by the property and mutation tests, kept as plain tests once fixed (an
open one would be a strict expected failure, so that its fix shows up)."""

from __future__ import annotations

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


def test_per_branch_missing_key_is_fixed_in_its_branch() -> None:
    """A key missing from one branch of an if/else factory is added to that branch only (found by
    the mutation round-trip on vllm/models/hy_v4)."""
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


def test_unsent_key_is_found_when_the_sender_does_not_receive() -> None:
    """The wrapper reads the tensors and returns what its encoder, which never sees them, sends
    (found by the mutation round-trip on chatglm.py GLMTransformer)."""
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


def test_delegation_of_a_base_init_that_never_runs_is_missing() -> None:
    """The base's delegation is assigned in its `__init__`, which `nn.Module.__init__(self)` skips
    (found by the mutation round-trip on lightonocr.py, whose base is Mistral3ForConditionalGeneration)."""
    assert [(f.rule, f.cls) for f in _findings(SKIPPED_SUPER_INIT)] == [("PP004", "OcrVLM")]


OCR_ONLY = '''\
from torch import nn

from vllm.model_executor.models.model import BaseVLM, TextModel


class OcrVLM(BaseVLM):
    def __init__(self, *, vllm_config, prefix=""):
        nn.Module.__init__(self)
        self.language_model = TextModel(vllm_config.model_config.hf_config)
'''


def test_a_file_that_only_skips_a_base_init_is_checked() -> None:
    """The subclass's file names no intermediate tensors at all (no forward, no producer), yet it
    is the one to fix: `nn.Module.__init__(self)` makes it relevant (lightonocr.py)."""
    base = SKIPPED_SUPER_INIT[: SKIPPED_SUPER_INIT.index("\n\nclass OcrVLM")]
    registry = '_MULTIMODAL_MODELS = {\n    "OcrVLM": ("ocr", "OcrVLM"),\n}\n'
    files = {f"{MODELS}/model.py": base, f"{MODELS}/ocr.py": OCR_ONLY, f"{MODELS}/registry.py": registry}
    with workspace.on_disk(files) as root:
        findings = workspace.check(root).findings
    assert [(f.rule, f.cls, f.path.name, bool(f.fix)) for f in findings] == [("PP004", "OcrVLM", "ocr.py", True)]


HELPER_READER = HEADER + '''

class Planner:
    def plan(self, positions, intermediate_tensors):
        if intermediate_tensors is not None:
            return None
        return positions


class SparseModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.planner: Planner | None = None
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states", "unused_buffer"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed(input_ids)
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        planner = self.planner
        step = planner.plan(positions, intermediate_tensors)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states
'''


def test_tensors_handed_to_a_declared_helper_are_followed() -> None:
    """`planner = self.planner` then `planner.plan(positions, intermediate_tensors)`, with the
    attribute declared `self.planner: Planner | None = None`: the helper is resolved, reads no key,
    and the unsent key gets its fix (found by the mutation round-trip on minimax_m3's
    `decode.plan(...)`)."""
    assert [(f.rule, f.keys, bool(f.fix)) for f in _findings(HELPER_READER)] == [("PP003", ("unused_buffer",), True)]


REGISTRY_BUILT = HEADER + '''from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import init_vllm_registered_model


class NoFactoryLM(nn.Module, SupportsPP):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.embed(input_ids)


class Wrapper(nn.Module, SupportsPP):
    def __init__(self, vllm_config):
        super().__init__()
        self.language_model = init_vllm_registered_model(vllm_config=vllm_config, architectures=["{arch}"])

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.language_model(input_ids, positions, intermediate_tensors)
'''


def test_registry_built_submodule_is_resolved_through_its_architecture() -> None:
    """`init_vllm_registered_model(..., architectures=["X"])` builds the registered class of X:
    delegating to one without a producer is no fix (glm5next's multimodal wrapper), to one with a
    producer an unsafe one that names the class."""
    registry = '_TEXT_GENERATION_MODELS = {\n    "NoFactoryLM": ("model", "NoFactoryLM"),\n    "Wrapper": ("model", "Wrapper"),\n    "TextLM": ("text", "TextModel"),\n}\n'
    text = SKIPPED_SUPER_INIT[: SKIPPED_SUPER_INIT.index("\n\nclass BaseVLM")]
    found = {}
    for arch in ("NoFactoryLM", "TextLM"):
        files = {f"{MODELS}/model.py": REGISTRY_BUILT.replace("{arch}", arch), f"{MODELS}/text.py": text, f"{MODELS}/registry.py": registry}
        with workspace.on_disk(files) as root:
            found[arch] = [(f.rule, f.cls, f.fix.applicability.value if f.fix else f.message) for f in workspace.check(root).findings if f.cls == "Wrapper"]
    assert found["NoFactoryLM"] == [("PP004", "Wrapper", "SupportsPP class has no make_empty_intermediate_tensors (fails at start-up of rank 1); not auto-fixable: `self.language_model` has no make_empty_intermediate_tensors either")]
    assert found["TextLM"] == [("PP004", "Wrapper", "unsafe")]


READ_UNSENT_PER_BRANCH = HEADER + '''

class BranchyModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        if self.use_mix:
            self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
                ["hidden_states", "pre_mix"], config.hidden_size
            )
        else:
            self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
                ["hidden_states"], config.hidden_size
            )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed(input_ids)
        else:
            hidden_states = intermediate_tensors["hidden_states"] + intermediate_tensors["never_sent"]
        if not get_pp_group().is_last_rank:
            if self.use_mix:
                return IntermediateTensors({"hidden_states": hidden_states, "pre_mix": hidden_states})
            return IntermediateTensors({"hidden_states": hidden_states})
        return hidden_states
'''


def test_a_key_read_but_never_sent_is_reported_once_for_all_branches() -> None:
    """Found by the long hypothesis profile: with per-branch verdicts, a key read and never sent
    was reported once per factory branch."""
    assert [(f.rule, f.keys, bool(f.fix)) for f in _findings(READ_UNSENT_PER_BRANCH)] == [("PP001", ("never_sent",), False)]
