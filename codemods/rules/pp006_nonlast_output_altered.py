"""PP006 nonlast-output-altered: a wrapper transforms the inner output on non-last ranks too."""

from __future__ import annotations

from pathlib import Path

from ..edits import EarlyReturn
from ..findings import Applicability, Evidence, Finding, Fix
from ..vllm_names import PP_INTERFACE
from .base import Context, Rule

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
        "arithmetic, a score head) crashes on non-last ranks. The fix returns the inner output "
        "unchanged there first; it is unsafe because the wrapper may rely on the transformation "
        "in ways only a human can judge."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.UNSAFE,
)


def _inner_model(ctx: Context, owner, target: tuple[str, ...]) -> bool:
    """A call of a submodule or of `super().forward`, not of a helper method of the class."""
    if target[:1] == ("super",):
        return target[-1] == "forward"
    return not (len(target) == 2 and target[0] == "self" and ctx.resolver.is_method(owner, target[1]))


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
        altered = next((a for a in fn.altered if _inner_model(ctx, owner, a.target)), None)
        if altered is None or (owner.key, fn.line) in seen:
            continue
        seen.add((owner.key, fn.line))
        path = owner.module.path
        fix = None
        if altered.var and ctx.editable(path):
            edit = EarlyReturn(path=Path(path), line=altered.insert_after, column=0, cls=owner.cls.name, var=altered.var)
            fix = Fix(
                applicability=Applicability.UNSAFE,
                description=f"return `{altered.var}` unchanged on non-last ranks before it is transformed",
                edits=(edit,),
            )
        findings.append(RULE.finding(
            path=path, line=altered.line, column=0, cls=owner.cls.name,
            message="the inner model's output is transformed without returning it unchanged on non-last "
            "ranks (IntermediateTensors there: the wrapper crashes)"
            + ("" if fix else "; not auto-fixable: the inner call is nested in the returned expression"),
            fix=fix,
            evidence=(
                Evidence(Path(path), altered.inner_line, ctx.line(path, altered.inner_line), "inner call"),
                Evidence(Path(path), altered.line, ctx.line(path, altered.line), "transformed"),
            ),
        ))
    return findings
