"""PP006 nonlast-output-altered: a wrapper transforms the inner output on non-last ranks too."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Evidence, Finding, Fix
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE
from ..edits import EarlyReturn

BEFORE = '''\
from torch import nn


class ScaledForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix=prefix)
        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors

    def forward(self, input_ids, positions, intermediate_tensors=None):
        hidden_states = self.model(input_ids, positions, intermediate_tensors)
        return hidden_states / self.scale
'''

AFTER = '''\
from torch import nn
from vllm.distributed import get_pp_group


class ScaledForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix=prefix)
        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors

    def forward(self, input_ids, positions, intermediate_tensors=None):
        hidden_states = self.model(input_ids, positions, intermediate_tensors)
        if not get_pp_group().is_last_rank:
            return hidden_states
        return hidden_states / self.scale
'''

RULE = Rule(
    code="PP006",
    name="nonlast-output-altered",
    summary="A SupportsPP wrapper post-processes the inner model's output on every rank.",
    rationale=(
        "On a non-last rank the inner model returns `IntermediateTensors`, and the runner asserts "
        "that the wrapper hands exactly that back. A wrapper that transforms the output (`.to()`, "
        "arithmetic, a score head) crashes on non-last ranks, and so does one that unpacks it or "
        "indexes it by position (`h, extra = self.language_model.model(...)`, `out[0]`): "
        "`IntermediateTensors.__getitem__` returns None for an integer, so `out[0]` is None and "
        "unpacking never runs out of items (not when the inner model's forward returns a tuple on "
        "every rank, `return IntermediateTensors(...), None`: that tuple is what is unpacked). The "
        "output is followed through the "
        "forward's control flow: inline expressions (`return self.model(...) / self.scale_width`, "
        "MiniCPM), `if`/`else` branches, helper methods of the class or its bases that make the "
        "inner call; a transform that only last-rank paths take is fine. The fix returns the inner output "
        "unchanged there first; it is unsafe because the wrapper may rely on the transformation "
        "in ways only a human can judge."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.UNSAFE,
)


def _inner_model(ctx: Context, owner, target: tuple[str, ...], depth: int = 0) -> bool:
    """A call of a submodule or of `super().forward`, or of a helper method (of the class or a
    base) that returns such a call's output unchanged."""
    if target[:1] == ("super",):
        return target[-1] == "forward"
    if not (len(target) == 2 and target[0] == "self" and ctx.resolver.is_method(owner, target[1])):
        return True
    found = ctx.index.find_method(owner, target[1])
    if found is None or depth > 3 or not found[1].returns_inner:
        return False
    helper_owner, helper = found
    return any(
        _inner_model(ctx, helper_owner, call.target, depth + 1)
        for call in helper.calls if not call.relay
    )


_HOW = {"transformed": "transformed", "unpacked": "unpacked", "indexed": "indexed by position"}


def _unpackable(ctx: Context, ref, owner, altered) -> bool:
    """Unpacked or indexed by position, the output of an inner model whose forward returns a tuple
    on every rank (`return hidden_states, None`, IntermediateTensors or not): what the wrapper
    takes apart is that tuple."""
    if altered.how == "transformed":
        return False
    target = altered.target
    if target[:1] == ("super",):
        found = ctx.index.find_method(ref, target[-1], after=owner)
    else:
        classes = ctx.resolver.object_classes(ref, target[:-1] if target[-1] == "forward" else target)
        if isinstance(classes, str) or not classes:
            return False
        found = ctx.index.find_method(classes[0], "forward")
    return found is not None and found.fn.returns_tuple


def check(ctx: Context) -> list[Finding]:
    findings = []
    seen = set()
    for ref in ctx.subjects:
        if PP_INTERFACE not in ctx.index.base_names(ref):
            continue
        found = ctx.index.find_method(ref, "forward")
        if found is None:
            continue
        owner, fn = found.owner, found.fn
        altered = next(
            (a for a in fn.altered if _inner_model(ctx, owner, a.target) and not _unpackable(ctx, ref, owner, a)), None
        )
        if altered is None or (owner.key, fn.line) in seen:
            continue
        seen.add((owner.key, fn.line))
        path = owner.module.path
        fix = None
        if altered.var and altered.insert_after and ctx.editable(path):
            edit = EarlyReturn(path=Path(path), line=altered.insert_after, column=0, cls=owner.cls.name, var=altered.var)
            fix = Fix(
                applicability=Applicability.UNSAFE,
                description=f"return `{altered.var}` unchanged on non-last ranks before it is {_HOW[altered.how]}",
                edits=(edit,),
            )
        findings.append(RULE.finding(
            path=path, line=altered.line, column=0, cls=owner.cls.name,
            message=f"the inner model's output is {_HOW[altered.how]} without "
            "returning it unchanged on non-last ranks (IntermediateTensors there: the wrapper crashes)"
            + ("" if fix else f"; not auto-fixable: {_why(altered, ctx.editable(path))}"),
            fix=fix,
            evidence=(
                Evidence(Path(path), altered.inner_line, ctx.line(path, altered.inner_line), "inner call"),
                Evidence(Path(path), altered.line, ctx.line(path, altered.line), "transformed"),
            ),
        ))
    return findings


def _why(altered, editable: bool) -> str:
    if not altered.var and altered.how == "unpacked":
        return "the output is unpacked where the inner call makes it: no name holds it to return first"
    if not altered.var:
        return "the inner call is nested in an expression: no name holds its output to return first"
    if not altered.insert_after:
        return "the transformation is inside a block: no single place returns the output first"
    return "the forward is outside the checked paths" if not editable else ""
