"""PP002 intermediate-tensors-default: an entry forward whose `intermediate_tensors` has no default."""

from __future__ import annotations

import re
from pathlib import Path

from ....facts import FunctionFacts, ModuleFacts, Param
from ....findings import Applicability, Evidence, Finding, Fix
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PARAM
from ..edits import DefaultNone

BEFORE = '''\
class Gemma3ForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = Gemma3Model(vllm_config=vllm_config, prefix=prefix)
        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors

    def forward(self, input_ids, positions,
                intermediate_tensors: IntermediateTensors | None,
                inputs_embeds: torch.Tensor | None = None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)
'''

AFTER = '''\
class Gemma3ForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = Gemma3Model(vllm_config=vllm_config, prefix=prefix)
        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors

    def forward(self, input_ids, positions,
                intermediate_tensors: IntermediateTensors | None = None,
                inputs_embeds: torch.Tensor | None = None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)
'''

RULE = Rule(
    code="PP002",
    name="intermediate-tensors-default",
    summary="The `intermediate_tensors` parameter of an entry forward has no `= None` default.",
    rationale=(
        "Callers of a registered architecture may omit `intermediate_tensors`: pooling runners, "
        "draft-model proposers, and older runners on the first rank. `@support_torch_compile` binds "
        "every call with `inspect.signature(forward).bind(...)`, so a required parameter fails with "
        "`TypeError: missing a required argument` (Gemma3Model, vLLM <= 0.27.0). Entry forwards are "
        "the ones each registered architecture resolves to; inner `*Model.forward`s called "
        "positionally by their wrapper are left alone unless `--pp002-scope all`."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)

ADMITS_NONE = re.compile(r"\bNone\b|\bOptional\[|\bAny\b|\bobject\b")
POSITIONAL = ("posonly", "positional")


def check(ctx: Context) -> list[Finding]:
    seen: set[tuple[str, int]] = set()
    findings = []
    for ref in _candidates(ctx):
        found = ctx.index.find_method(ref, "forward")
        if found is None:
            continue
        owner, fn = found.owner, found.fn
        param = fn.param(PARAM)
        if param is None or param.has_default or owner.cls.is_protocol:
            continue
        if (owner.module.path, fn.line) in seen:
            continue
        seen.add((owner.module.path, fn.line))
        findings.append(_finding(ctx, ref, owner, fn, param))
    return findings


def _candidates(ctx: Context) -> list[ClassRef]:
    """Entries and draft heads (their proposers call forward without the argument too)."""
    registered = list(ctx.entries) + list(ctx.drafts)
    if ctx.pp002_scope == "all":
        return registered + [r for r in ctx.subjects if r not in registered]
    return registered


def _finding(ctx: Context, entry: ClassRef, owner: ClassRef, fn: FunctionFacts, param: Param) -> Finding:
    why_entry = (
        f"entry forward of registered {entry.cls.name}" if ctx.registry_found else
        f"{entry.cls.name} declares SupportsPP (no registry found)"
    )
    if entry in ctx.drafts:
        why_entry = f"forward of registered draft head {entry.cls.name}"
    elif ctx.pp002_scope == "all" and entry not in ctx.entries:
        why_entry = "model forward (--pp002-scope all)"
    fix, why_not = _plan(ctx, owner, fn, param)
    message = f"`intermediate_tensors` has no `= None` default in {owner.cls.name}.forward ({why_entry})"
    if why_not:
        message += f"; not auto-fixable: {why_not}"
    path = owner.module.path
    evidence = (Evidence(Path(path), param.line, ctx.line(path, param.line), "parameter"),)
    return RULE.finding(
        path=path, line=param.line, column=param.column, cls=owner.cls.name, message=message,
        fix=fix, evidence=evidence,
    )


def _plan(ctx: Context, owner: ClassRef, fn: FunctionFacts, param: Param) -> tuple[Fix | None, str]:
    to_default = [param.name]
    if param.kind in POSITIONAL:
        index = fn.params.index(param)
        for later in fn.params[index + 1 :]:
            if later.kind not in POSITIONAL or later.has_default:
                continue
            if later.annotation is None or not ADMITS_NONE.search(later.annotation):
                return None, (
                    f"positional parameter `{later.name}` after it has no default and its "
                    "annotation does not admit None"
                )
            to_default.append(later.name)
    style = _optional_style(owner.module, param.annotation)
    path = owner.module.path
    if not ctx.editable(path):
        return None, f"the forward lives in {path}, outside the checked paths"
    extra = f" (and to {', '.join(to_default[1:])})" if len(to_default) > 1 else ""
    optional = f", annotated as optional ({style})" if style else ""
    edit = DefaultNone(
        path=Path(path), line=param.line, column=param.column, function=fn.name, params=tuple(to_default), style=style,
    )
    return Fix(
        applicability=Applicability.SAFE,
        description=f"add `= None` to intermediate_tensors{extra}{optional}",
        edits=(edit,),
    ), ""


def _optional_style(module: ModuleFacts, annotation: str | None) -> str:
    """"" when the annotation already admits None, else "pipe" (`X | None`) or "optional"."""
    if annotation is None or ADMITS_NONE.search(annotation):
        return ""
    if module.uses_typing_optional and not module.uses_pipe_optional and not module.future_annotations:
        return "optional"
    return "pipe"
