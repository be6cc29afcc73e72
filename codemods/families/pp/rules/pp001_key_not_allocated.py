"""PP001 key-not-allocated: a key sent or read across ranks that the factory does not allocate."""

from __future__ import annotations

from pathlib import Path

from ....conditions import missing
from ....findings import Applicability, Finding, Fix
from ....index import ClassRef
from ....resolve import Branch, Traffic
from ....rules.base import Context, FactorySite, FactoryUser, Rule, guard_text, quote_keys
from ....vllm_names import PARAM
from ..edits import AddFactoryKeys, CloneDictEntry

BEFORE = '''\
class Step3TextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
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

AFTER = '''\
class Step3TextModel(nn.Module):
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
    code="PP001",
    name="key-not-allocated",
    summary="A key sent or read across pipeline ranks is missing from make_empty_intermediate_tensors.",
    rationale=(
        "Non-first ranks receive into buffers built by `make_empty_intermediate_tensors`, and both "
        "runners hand the forward exactly those keys in profile runs. A key the previous rank sends "
        "(`IntermediateTensors({...})`) or this rank reads (`intermediate_tensors[\"k\"]`) but the "
        "factory does not allocate raises `KeyError` at start-up of every non-first rank "
        "(Step3TextModel, vLLM <= 0.21.0). The fix adds the keys that are sent to the factory's list; "
        "for a factory assigned per configuration (`if self.flag: ... else: ...`), to the list of the "
        "branch that lacks them, when every configuration taking that branch sends them. A key that is "
        "read but never sent is reported only, since allocating it would break the newer runner the "
        "other way."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
    traces=True,
)


def check(ctx: Context) -> list[Finding]:
    by_site: dict[FactorySite, list[FactoryUser]] = {}
    findings: list[Finding] = []
    reported: set[tuple] = set()  # one read-only finding per (class, keys), one conditional per (site, keys)
    for ref in ctx.subjects:
        traffic = ctx.resolver.traffic(ref)
        if traffic.forward is None or traffic.forward.fn.param(PARAM) is None:
            continue
        alloc = ctx.resolver.allocation(ref)
        if alloc.missing or not alloc.side.complete or not alloc.sites:
            continue
        sent_anywhere = {u.use.key for u in traffic.sends.uses}
        for branch in alloc.branches():
            sent = missing([traffic.sends], branch.side, branch.guard)
            read = missing([traffic.reads], branch.side, branch.guard)
            if sent is None or read is None:
                continue
            site = FactorySite(branch.owner.key, branch.producer)
            read_only = tuple(k for k in read.always if k not in sent_anywhere)
            if read_only and (branch.owner.key, read_only) not in reported:  # once per class, not per branch
                reported.add((branch.owner.key, read_only))
                findings.append(_read_only(ctx, ref, branch, traffic, read_only))
            by_site.setdefault(site, []).append(FactoryUser(ref, branch, traffic, sent.always))
            for verdict in (sent, read):
                if verdict.sometimes and (site, verdict.sometimes) not in reported:
                    reported.add((site, verdict.sometimes))
                    findings.append(_conditional(ctx, branch, verdict, traffic))
    for users in by_site.values():
        needs = {u.keys for u in users}
        violating = [u for u in users if u.keys]
        if len(needs) == 1 and violating:
            findings.append(_sent(ctx, violating[0], ""))
        else:
            why = "classes sharing this factory need different keys"
            findings.extend(_sent(ctx, u, why) for u in violating)
    return findings


def _sent(ctx: Context, user: FactoryUser, why: str) -> Finding:
    branch, keys = user.branch, user.keys
    owner, producer = branch.owner, branch.producer
    path = owner.module.path
    line, column = producer.list_line or producer.line, producer.list_column or producer.column
    quoted = quote_keys(keys)
    fix = None
    clone = None if why else _clone_plan(ctx, branch, keys)
    why = why or ("" if clone else _unfixable(ctx, branch))
    if clone:
        fix = clone
    elif not why:
        fix = Fix(
            applicability=Applicability.SAFE,
            description=f"add {quoted} to the factory's key list" + _when(branch),
            edits=(AddFactoryKeys(path=Path(path), line=line, column=column, existing=producer.keys or (), keys=keys),),
        )
    return RULE.finding(
        path=path, line=line, column=column, cls=owner.cls.name if fix else user.ref.cls.name,
        message=f"{quoted} sent to the next rank but not allocated by make_empty_intermediate_tensors"
        f"{_when(branch)} (KeyError on non-first ranks)" + (f"; not auto-fixable: {why}" if why else ""),
        keys=keys, fix=fix, evidence=_evidence(ctx, branch, user.traffic, keys),
    )


def _when(branch: Branch) -> str:
    """` when `cfg`` for a factory assigned under a configuration condition."""
    return f" when `{guard_text(branch.guard)}`" if branch.guard else ""


def _clone_plan(ctx: Context, branch: Branch, keys: tuple[str, ...]) -> Fix | None:
    """Unsafe fix for a hand-written producer that returns one dict literal of fixed keys."""
    owner, producer = branch.owner, branch.producer
    if producer.kind != "method" or not branch.own or branch.guard:
        return None
    fn = owner.cls.methods.get(producer.method)
    if fn is None or len(fn.alloc_dicts) != 1 or fn.alloc_delegations or not ctx.editable(owner.module.path):
        return None
    if any(u.key is None or u.guard for u in fn.allocs):
        return None
    line, column = fn.alloc_dicts[0]
    existing = tuple(u.key for u in fn.allocs)
    quoted = quote_keys(keys)
    return Fix(
        applicability=Applicability.UNSAFE,
        description=f"add {quoted} to {producer.method}, each a copy of the `{existing[0]}` entry "
        "(unsafe: the new buffer may need another shape)",
        edits=(CloneDictEntry(path=Path(owner.module.path), line=line, column=column, existing=existing, keys=keys),),
    )


def _unfixable(ctx: Context, branch: Branch) -> str:
    if not branch.own:
        return "the factory is assigned under configuration conditions that overlap"
    if branch.producer.kind != "factory":
        return f"keys are allocated by a hand-written {branch.producer.kind}"
    if not ctx.editable(branch.owner.module.path):
        return f"the factory lives in {branch.owner.module.path}, outside the checked paths"
    return ""


def _read_only(ctx: Context, ref: ClassRef, branch: Branch, traffic: Traffic, keys: tuple[str, ...]) -> Finding:
    owner, producer = branch.owner, branch.producer
    quoted = quote_keys(keys)
    return RULE.finding(
        path=owner.module.path, line=producer.list_line or producer.line,
        column=producer.list_column or producer.column, cls=ref.cls.name,
        message=f"{quoted} read on a non-first rank but neither sent nor allocated; "
        "no fix: allocating a key that is never sent breaks the newer runner",
        keys=keys, evidence=_evidence(ctx, branch, traffic, keys),
    )


def _evidence(ctx: Context, branch: Branch, traffic: Traffic, keys: tuple[str, ...]) -> tuple:
    evidence = ctx.evidence([u for u in traffic.sends.uses if u.use.key in keys], "sent")
    evidence += ctx.evidence([u for u in traffic.reads.uses if u.use.key in keys], "read")
    evidence += ctx.evidence(branch.side.uses[:1], "allocated")
    return tuple(evidence)


def _conditional(ctx: Context, branch: Branch, verdict, traffic: Traffic) -> Finding:
    keys = verdict.sometimes
    owner, producer = branch.owner, branch.producer
    conditions = " / ".join(verdict.conditions)
    evidence = ctx.evidence([u for u in traffic.sends.uses + traffic.reads.uses if u.use.key in keys], "used")
    if verdict.shared:
        message = (
            f"{quote_keys(keys)} not allocated in some configurations of "
            f"`{conditions}`; no fix: the mismatch depends on the configuration"
        )
        return RULE.finding(
            path=owner.module.path, line=producer.line, column=producer.column,
            cls=owner.cls.name, message=message, keys=keys, evidence=evidence,
        )
    return RULE.finding(
        path=owner.module.path, line=producer.line, column=producer.column, cls=owner.cls.name,
        message=f"cannot verify {quote_keys(keys)}: allocated and used under different "
        f"conditions (`{conditions}`); left alone",
        keys=keys, evidence=evidence, note="cannot-verify",
    )
