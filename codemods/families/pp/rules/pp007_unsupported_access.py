"""PP007 unsupported-access: `.get(...)`, `.keys()` or `in` on an IntermediateTensors."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Evidence, Finding, Fix
from ....rules.base import Context, Rule
from ..edits import TensorsAccess

BEFORE = '''\
class Gemma4Model(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None, per_layer_inputs=None):
        if not get_pp_group().is_first_rank:
            per_layer_inputs = intermediate_tensors.get("per_layer_inputs")
        return self.layers(input_ids, positions, per_layer_inputs)
'''

AFTER = '''\
class Gemma4Model(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None, per_layer_inputs=None):
        if not get_pp_group().is_first_rank:
            per_layer_inputs = intermediate_tensors.tensors.get("per_layer_inputs")
        return self.layers(input_ids, positions, per_layer_inputs)
'''

RULE = Rule(
    code="PP007",
    name="unsupported-access",
    summary="`.get()`, `.keys()` or `in` used on an IntermediateTensors, which supports none of them.",
    rationale=(
        "`IntermediateTensors` is a thin wrapper with `__getitem__`, `items()` and `.tensors`, but "
        "no `get`, `keys` or `__contains__`: `x.get(\"k\")` raises AttributeError (gemma4, vLLM "
        "0.19.0), `x.keys()` (so also `\"k\" in x.keys()`) raises AttributeError, and `\"k\" in x` falls "
        "back to integer indexing and never terminates. The fix goes through the underlying dict: "
        "`x.tensors.get(\"k\")`, `x.tensors.keys()`, `\"k\" in x.tensors`."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)


def check(ctx: Context) -> list[Finding]:
    """Accesses in model classes (those with a forward); runner code is not this rule's."""
    findings = []
    seen = set()
    for ref in ctx.subjects:
        if not ctx.resolver.is_method(ref, "forward"):
            continue
        for fn in ref.cls.methods.values():
            for access in fn.accesses:
                where = (ref.module.path, access.line, access.column)
                if where in seen:
                    continue
                seen.add(where)
                path = ref.module.path
                edit = TensorsAccess(path=Path(path), line=access.line, column=access.column, access=access.kind)
                findings.append(RULE.finding(
                    path=path, line=access.line, column=access.column, cls=ref.cls.name,
                    message=f"`{access.text}`: IntermediateTensors has no "
                    + ("`__contains__`" if access.kind == "in" else f"`{access.kind}`"),
                    fix=Fix(
                        applicability=Applicability.SAFE, description="go through `.tensors`", edits=(edit,),
                    ) if ctx.editable(path) else None,
                    evidence=(Evidence(Path(path), access.line, ctx.line(path, access.line), "access"),),
                ))
    return findings
