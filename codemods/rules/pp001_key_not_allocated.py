"""PP001 key-not-allocated: a key sent or read across ranks that the factory does not allocate."""

from __future__ import annotations

from pathlib import Path

from ..conditions import missing
from ..findings import Applicability, Edit, Finding, Fix
from .base import Context, Rule

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
        "a key that is read but never sent is reported only, since allocating it would break the "
        "newer runner the other way."
    ),
    before=(
        "self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(\n"
        "    [\"hidden_states\"], config.hidden_size\n)\n"
        "...\n"
        "return IntermediateTensors({\"hidden_states\": hidden_states, \"residual\": residual})\n"
    ),
    after=(
        "self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(\n"
        "    [\"hidden_states\", \"residual\"], config.hidden_size\n)\n"
    ),
    fix=Applicability.SAFE,
)


def check(ctx: Context) -> list[Finding]:
    plans: dict[tuple, dict] = {}
    findings: list[Finding] = []
    for ref in ctx.subjects:
        traffic = ctx.resolver.traffic(ref)
        if traffic.forward is None or traffic.forward[1].param("intermediate_tensors") is None:
            continue
        alloc = ctx.resolver.allocation(ref)
        if alloc.missing or not alloc.side.complete or not alloc.sites:
            continue
        sent = missing([traffic.sends], alloc.side)
        read = missing([traffic.reads], alloc.side)
        if sent is None or read is None:
            continue
        sent_anywhere = {u.use.key for u in traffic.sends.uses}
        read_only = tuple(k for k in read.always if k not in sent_anywhere and k not in sent.always)
        owner, producer = alloc.sites[0]
        site = (owner.module.path, producer.list_line or producer.line, producer.list_column or producer.column)
        for keys, is_sent in ((sent.always, True), (read_only, False)):
            if not keys:
                continue
            entry = plans.setdefault((site, is_sent), {"keys": set(), "subjects": [], "alloc": alloc})
            entry["keys"].add(keys)
            entry["subjects"].append((ref, traffic))
        for verdict in (sent, read):
            if verdict.sometimes:
                findings.append(_conditional(ctx, ref, alloc, verdict, traffic))
    for (site, is_sent), entry in plans.items():
        findings.append(_finding(ctx, site, is_sent, entry))
    return [f for f in findings if f is not None]


def _finding(ctx: Context, site, is_sent: bool, entry: dict) -> Finding:
    alloc = entry["alloc"]
    owner, producer = alloc.sites[0]
    keys = sorted(entry["keys"], key=len)[-1]
    _, traffic = entry["subjects"][0]
    evidence = ctx.evidence([u for u in traffic.sends.uses if u.use.key in keys], "sent")
    evidence += ctx.evidence([u for u in traffic.reads.uses if u.use.key in keys], "read")
    evidence += ctx.evidence([u for u in alloc.side.uses[:1]], "allocated")
    quoted = ", ".join(f'"{k}"' for k in keys)
    path, line, column = site
    if not is_sent:
        return Finding(
            RULE.code, RULE.name, Path(path), line, column, owner.cls.name,
            f"{quoted} read on a non-first rank but neither sent nor allocated; "
            "no fix: allocating a key that is never sent breaks the newer runner",
            keys=keys, evidence=tuple(evidence),
        )
    fix, why = None, ""
    if len(entry["keys"]) > 1:
        why = "classes sharing this factory need different keys"
    elif len(alloc.sites) > 1 or producer.guard:
        why = "the factory is assigned under a configuration condition"
    elif producer.kind != "factory":
        why = f"keys are allocated by a hand-written {producer.kind}"
    elif not ctx.editable(path):
        why = f"the factory lives in {path}, outside the checked paths"
    else:
        fix = Fix(
            Applicability.SAFE,
            f"add {quoted} to the factory's key list",
            (Edit("add_keys", Path(path), line, column, (tuple(producer.keys), keys)),),
        )
    return Finding(
        RULE.code, RULE.name, Path(path), line, column, owner.cls.name,
        f"{quoted} sent to the next rank but not allocated by make_empty_intermediate_tensors "
        f"(KeyError on non-first ranks)" + (f"; not auto-fixable: {why}" if why else ""),
        keys=keys, fix=fix, evidence=tuple(evidence),
    )


def _conditional(ctx: Context, ref, alloc, verdict, traffic) -> Finding | None:
    keys = verdict.sometimes
    owner, producer = alloc.sites[0]
    conditions = " / ".join(verdict.conditions)
    evidence = ctx.evidence([u for u in traffic.sends.uses + traffic.reads.uses if u.use.key in keys], "used")
    if verdict.shared:
        message = (
            f"{', '.join(repr(k) for k in keys)} not allocated in some configurations of "
            f"`{conditions}`; no fix: the mismatch depends on the configuration"
        )
        return Finding(
            RULE.code, RULE.name, Path(owner.module.path), producer.line, producer.column,
            owner.cls.name, message, keys=keys, evidence=tuple(evidence),
        )
    return Finding(
        RULE.code, RULE.name, Path(owner.module.path), producer.line, producer.column,
        owner.cls.name,
        f"cannot verify {', '.join(repr(k) for k in keys)}: allocated and used under different "
        f"conditions (`{conditions}`); left alone",
        keys=keys, evidence=tuple(evidence), note="cannot-verify",
    )
