"""PP003 key-allocated-not-sent: the factory allocates a key the previous rank never sends."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

from ....conditions import missing
from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, FactorySite, FactoryUser, Rule, guard_text, quote_keys
from ....vllm_names import PARAM
from ..edits import RemoveFactoryKeys

BEFORE = '''\
class FalconH1Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states", "residual"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        hidden_states = self.layers(positions, hidden_states)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return self.final_layernorm(hidden_states)
'''

AFTER = '''\
class FalconH1Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
        else:
            hidden_states = intermediate_tensors["hidden_states"]
        hidden_states = self.layers(positions, hidden_states)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return self.final_layernorm(hidden_states)
'''

RULE = Rule(
    code="PP003",
    name="key-allocated-not-sent",
    summary="make_empty_intermediate_tensors allocates a key that no non-last rank sends.",
    rationale=(
        "The newer runner (default since vLLM 0.29) loops over the buffer keys and indexes the "
        "received dict with each, so a key that is allocated but never sent raises `KeyError` on "
        "the first real step of every non-first rank (FalconH1Model allocated `residual` but sent "
        "only `hidden_states`). The fix removes the key from a literal factory list (from one branch's "
        "list, for a factory assigned per configuration) when the sent keys are known exactly and the "
        "key is not read; otherwise it is reported only."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
    traces=True,
)


def check(ctx: Context) -> list[Finding]:
    by_site: dict[FactorySite, list[FactoryUser]] = {}
    for ref in ctx.subjects:
        traffic = ctx.resolver.traffic(ref)
        if traffic.forward is None or traffic.forward.fn.param(PARAM) is None:
            continue
        if not traffic.sends.uses or not traffic.sends.complete:
            continue
        alloc = ctx.resolver.allocation(ref)
        if alloc.missing or not alloc.side.complete or not alloc.sites:
            continue
        for branch in alloc.branches():
            verdict = missing([branch.side], traffic.sends, branch.guard)
            if verdict is not None and verdict.always:
                by_site.setdefault(FactorySite(branch.owner.key, branch.producer), []).append(
                    FactoryUser(ref, branch, traffic, verdict.always)
                )
    findings = []
    for users in by_site.values():
        agree = len({u.keys for u in users}) == 1
        for user in users[:1] if agree else users:
            findings.append(_finding(ctx, user, agree))
    return findings


def _finding(ctx: Context, user: FactoryUser, agree: bool) -> Finding:
    branch, traffic, keys = user.branch, user.traffic, user.keys
    owner, producer = branch.owner, branch.producer
    path = owner.module.path
    line, column = producer.list_line or producer.line, producer.list_column or producer.column
    quoted = quote_keys(keys)
    when = f" when `{guard_text(branch.guard)}`" if branch.guard else ""
    read = {k for k in keys for u in traffic.reads.uses if u.use.key and fnmatchcase(k, u.use.key)}
    why = ""
    if not agree:
        why = "classes sharing this factory send different keys"
    elif producer.kind != "factory" or not branch.own:
        why = "the keys are not a single factory list per configuration"
    elif read or not traffic.reads.complete:
        why = "the key is read on non-first ranks" if read else "the keys read are not all known"
    elif not ctx.editable(path):
        why = f"the factory lives in {path}, outside the checked paths"
    fix = None if why else Fix(
        applicability=Applicability.SAFE,
        description=f"remove {quoted} from the factory's key list" + when,
        edits=(RemoveFactoryKeys(path=Path(path), line=line, column=column, existing=producer.keys or (), keys=keys),),
    )
    evidence = ctx.evidence([u for u in branch.side.uses if u.use.key in keys], "allocated")
    evidence += ctx.evidence(traffic.sends.uses, "sent")
    return RULE.finding(
        path=path, line=line, column=column, cls=owner.cls.name if fix else user.ref.cls.name,
        message=f"{quoted} allocated by make_empty_intermediate_tensors{when} but never sent"
        f"{' then' if when else ''} (KeyError in the newer runner)" + (f"; not auto-fixable: {why}" if why else ""),
        keys=keys, fix=fix, evidence=evidence,
    )
