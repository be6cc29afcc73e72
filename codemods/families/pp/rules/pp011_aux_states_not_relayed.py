"""PP011 aux-states-not-relayed: a decoder opted in to aux hidden states over PP whose forward
neither packs nor collects them; a layer loop whose index is stage-relative where the aux layer ids
are absolute (latent until the decoder opts in)."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Evidence, Finding, Fix
from ....index import ClassRef
from ....rules.base import Context, ExampleTree, Rule
from ....vllm_names import PP_INTERFACE
from ..edits import AuxOptOut
from ..facts.auxstates import FLAG
from .holders import held_by
from .release import interface_text

RULE = Rule(
    code="PP011",
    name="aux-states-not-relayed",
    summary="A decoder that declares or inherits `supports_aux_hidden_states_over_pp = True` overrides "
            "forward without packing or collecting the aux hidden states, or numbers its layers from 0 "
            "where the aux layer ids are absolute.",
    rationale=(
        "From vLLM 0.31.0 (#50514) the V2 runner runs EAGLE-3 with PP>1 when the target's inner "
        "decoder says `supports_aux_hidden_states_over_pp = True`: it reserves "
        "`aux_hidden_states_{i}` buffers on every non-first rank and copies the received dict into "
        "them, so every non-last rank must send `**self.pack_local_aux_hidden_states(aux)` and the "
        "last must prepend `collect_remote_aux_hidden_states(intermediate_tensors)`. A subclass that "
        "inherits the flag (from LlamaModel, Qwen2Model, ...) but overrides forward without either "
        "crashes with KeyError `aux_hidden_states_0` on rank 1 at the first step (MiMoModel until "
        "upstream set the flag to False). The minimal fix opts the subclass out, as upstream did: "
        "the runner then refuses EAGLE-3 with PP>1 for it cleanly, at start-up. Decoders of models "
        "without SupportsPP and SupportsEagle3 are left alone: vLLM refuses that setting before. "
        "Second shape: `aux_hidden_state_layers` holds absolute layer ids, so a layer loop "
        "`enumerate(islice(self.layers, self.start_layer, self.end_layer))` without "
        "`start=self.start_layer` whose index is compared with them (`idx in "
        "self.aux_hidden_state_layers`, `_maybe_add_hidden_state(aux, idx + 1, ...)`) captures the "
        "wrong layers on every rank whose share starts after layer 0. Until the decoder opts in, "
        "vLLM refuses EAGLE-3 with PP>1 for it, so the finding says it is latent (reported from "
        "0.31.0, where the opt-in exists); it is reported without a fix, since other uses of the "
        "index may already add `start_layer` (gemma4's per-layer inputs)."
    ),
    before=(
        "from vllm.model_executor.models.qwen2 import Qwen2Model\n"
        "\n"
        "\n"
        "class MiMoModel(Qwen2Model):\n"
        "    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):\n"
        "        ...\n"
    ),
    after=(
        "from vllm.model_executor.models.qwen2 import Qwen2Model\n"
        "\n"
        "\n"
        "class MiMoModel(Qwen2Model):\n"
        "    supports_aux_hidden_states_over_pp = False\n"
        "\n"
        "    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):\n"
        "        ...\n"
    ),
    fix=Applicability.SAFE,
    tree=ExampleTree(
        example="vllm/model_executor/models/mimo_model.py",
        files={
            "vllm/__init__.py": "",
            "vllm/model_executor/__init__.py": "",
            "vllm/model_executor/models/__init__.py": "",
            "vllm/model_executor/models/qwen2.py": (
                "class Qwen2Model(nn.Module):\n"
                "    supports_aux_hidden_states_over_pp = True\n"
            ),
            "vllm/model_executor/models/mimo.py": (
                "from vllm.model_executor.models.interfaces import SupportsEagle3, SupportsPP\n"
                "from vllm.model_executor.models.mimo_model import MiMoModel\n"
                "\n"
                "\n"
                "class MiMoForCausalLM(nn.Module, SupportsPP, SupportsEagle3):\n"
                "    def __init__(self, *, vllm_config, prefix=\"\"):\n"
                "        super().__init__()\n"
                "        self.model = MiMoModel(vllm_config=vllm_config, prefix=prefix)\n"
                "\n"
                "    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):\n"
                "        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)\n"
            ),
        },
    ),
)


DEPTH = 3


def check(ctx: Context) -> list[Finding]:
    machinery = _has_machinery(ctx)
    findings = []
    for module, cls in ctx.target_classes():
        aux = cls.aux
        if aux is None or not aux.forward_line:
            continue
        ref = ClassRef(module, cls)
        setter = _flag_setter(ctx, ref)
        opted_in = setter is not None and setter.cls.aux is not None and bool(setter.cls.aux.flag)
        relays = aux.packs or aux.collects or aux.delegates
        if not ((aux.relative_indices and machinery is not False) or (opted_in and not relays)):
            continue
        if not held_by(ctx, ref, DEPTH, PP_INTERFACE, "SupportsEagle3", entries=True):
            continue
        if opted_in and not relays:
            assert setter is not None
            findings.append(_finding(ctx, ref, setter))
        if machinery is not False:
            findings.extend(_relative_finding(ctx, ref, where, opted_in) for where in aux.relative_indices)
    return findings


def _has_machinery(ctx: Context) -> bool | None:
    """Whether the release's interfaces know the opt-in (vLLM >= 0.31.0; before it EAGLE-3 with
    PP>1 is refused at config time); None when the tree has no such file."""
    text = interface_text(ctx)
    return None if text is None else FLAG in text


def _relative_finding(ctx: Context, ref: ClassRef, where: tuple[int, int, str], opted_in: bool) -> Finding:
    line, column, index = where
    path = ref.module.path
    effect = "EAGLE-3 with PP>1 captures the wrong layers on every rank whose start_layer > 0"
    if not opted_in:
        effect = (f"unreachable until {ref.cls.name} opts in to `{FLAG}` (until then vLLM refuses EAGLE-3 "
                  f"with PP>1 for it); then {effect}")
    message = (
        ("" if opted_in else "latent: ")
        + f"`{index}` counts this rank's layers from 0 (`enumerate` without `start=`) but is compared with "
        f"absolute layer ids (`aux_hidden_state_layers`): {effect}; not auto-fixable: pass "
        "`start=self.start_layer` and re-check every other use of the index"
    )
    return RULE.finding(path=path, line=line, column=column, cls=ref.cls.name, message=message, latent=not opted_in,
                        evidence=(Evidence(Path(path), line, ctx.line(path, line), "enumerate"),))


def _flag_setter(ctx: Context, ref: ClassRef) -> ClassRef | None:
    """The first class in `ref`'s MRO that sets the flag."""
    for node in ctx.index.mro(ref):
        if node.may_hold(FLAG) and node.cls.aux is not None and node.cls.aux.flag is not None:
            return node
    return None


def _finding(ctx: Context, ref: ClassRef, setter: ClassRef) -> Finding:
    aux = ref.cls.aux
    assert aux is not None and setter.cls.aux is not None
    path = ref.module.path
    inherited = "inherits" if setter != ref else "declares"
    message = (
        f"{ref.cls.name} {inherited} `{FLAG} = True`"
        + (f" (from {setter.cls.name})" if setter != ref else "")
        + " but its forward neither packs (`pack_local_aux_hidden_states`) nor collects "
        "(`collect_remote_aux_hidden_states`) the aux hidden states: EAGLE-3 with PP>1 fails with "
        "KeyError 'aux_hidden_states_0' on rank 1 (vLLM >= 0.31.0)"
    )
    fix = None
    if setter != ref and ctx.editable(path):
        edit = AuxOptOut(path=Path(path), line=aux.body_line, column=aux.body_column, cls=ref.cls.name)
        fix = Fix(applicability=Applicability.SAFE, description=f"opt {ref.cls.name} out: `{FLAG} = False`",
                  edits=(edit,))
    elif setter == ref:
        message += "; not auto-fixable: the class opts in itself (relay the states, or set the flag to False)"
    else:
        message += f"; not auto-fixable: {path} is outside the checked paths"
    sp = setter.module.path
    evidence = (
        Evidence(Path(path), aux.forward_line, ctx.line(path, aux.forward_line), "forward"),
        Evidence(Path(sp), setter.cls.aux.flag_line, ctx.line(sp, setter.cls.aux.flag_line), "flag"),
    )
    return RULE.finding(path=path, line=aux.forward_line, column=aux.forward_column, cls=ref.cls.name,
                        message=message, fix=fix, evidence=evidence)
