"""PP011 aux-states-not-relayed: a decoder opted in to aux hidden states over PP whose forward
neither packs nor collects them."""

from __future__ import annotations

from pathlib import Path

from ..auxstates import FLAG
from ..edits import AuxOptOut
from ..findings import Applicability, Evidence, Finding, Fix
from ..index import ClassRef
from ..vllm_names import PP_INTERFACE
from .base import Context, Rule
from .holders import held_by

RULE = Rule(
    code="PP011",
    name="aux-states-not-relayed",
    summary="A decoder that declares or inherits `supports_aux_hidden_states_over_pp = True` overrides "
            "forward without packing or collecting the aux hidden states.",
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
        "without SupportsPP and SupportsEagle3 are left alone: vLLM refuses that setting before."
    ),
    before=(
        "class MiMoModel(Qwen2Model):\n"
        "    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):\n"
        "        ...\n"
    ),
    after=(
        "class MiMoModel(Qwen2Model):\n"
        "    supports_aux_hidden_states_over_pp = False\n"
        "\n"
        "    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):\n"
        "        ...\n"
    ),
    fix=Applicability.SAFE,
)


DEPTH = 3


def check(ctx: Context) -> list[Finding]:
    findings = []
    for path in sorted(ctx.targets):
        module = ctx.index.by_path.get(path)
        if module is None:
            continue
        for cls in module.classes.values():
            aux = cls.aux
            if aux is None or not aux.forward_line or aux.packs or aux.collects or aux.delegates:
                continue
            ref = ClassRef(module, cls)
            setter = _flag_setter(ctx, ref)
            if setter is None or setter.cls.aux is None or not setter.cls.aux.flag:
                continue
            if not held_by(ctx, ref, DEPTH, PP_INTERFACE, "SupportsEagle3", entries=True):
                continue
            findings.append(_finding(ctx, ref, setter))
    return findings


def _flag_setter(ctx: Context, ref: ClassRef) -> ClassRef | None:
    """The first class in `ref`'s MRO that sets the flag."""
    for node in ctx.index.mro(ref):
        if node.cls.aux is not None and node.cls.aux.flag is not None:
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
