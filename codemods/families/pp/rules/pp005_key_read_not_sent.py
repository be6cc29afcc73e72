"""PP005 key-read-not-sent: a non-first rank reads an allocated key that no rank sends."""

from __future__ import annotations

from ....conditions import missing
from ....findings import Finding
from ....rules.base import Context, Rule, quote_keys

BEFORE = '''\
class SenderForgotModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states", "residual"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = self.embed_tokens(input_ids), None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        hidden_states, residual = self.layers(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return self.norm(hidden_states, residual)
'''

AFTER = '''\
class SenderForgotModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states", "residual"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = self.embed_tokens(input_ids), None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        hidden_states, residual = self.layers(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return self.norm(hidden_states, residual)
'''

RULE = Rule(
    code="PP005",
    name="key-read-not-sent",
    summary="A key read on non-first ranks is allocated but never sent by the previous rank.",
    rationale=(
        "With the older runner the forward silently reads the zeros of an allocated buffer that "
        "nothing fills; with the newer runner the allocated-but-unsent key raises `KeyError`. "
        "Either the sender forgot the key or the reader should not expect it: which one is a "
        "modelling decision, so there is no automatic fix. (Keys read that are not allocated "
        "either are PP001's.)"
    ),
    before=BEFORE,
    after=AFTER,
    fix=None,
    traces=True,
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    seen = set()
    for ref in ctx.subjects:
        traffic = ctx.resolver.traffic(ref)
        if traffic.forward is None or not traffic.sends.uses or not traffic.sends.complete:
            continue
        alloc = ctx.resolver.allocation(ref)
        if alloc.missing or not alloc.side.complete:
            continue
        verdict = missing([traffic.reads], traffic.sends)
        allocated = {u.use.key for u in alloc.side.uses}
        keys = tuple(k for k in (verdict.always if verdict else ()) if k in allocated)
        if not keys:
            continue
        reads = [u for u in traffic.reads.uses if u.use.key in keys]
        where = (reads[0].path, reads[0].use.line, keys)
        if where in seen:
            continue
        seen.add(where)
        quoted = quote_keys(keys)
        findings.append(RULE.finding(
            path=reads[0].path, line=reads[0].use.line, column=0, cls=ref.cls.name,
            message=f"{quoted} read on non-first ranks but never sent by the previous rank; no fix: "
            "decide whether the sender or the reader is wrong",
            keys=keys,
            evidence=ctx.evidence(reads, "read") + ctx.evidence(traffic.sends.uses, "sent"),
        ))
    return findings
