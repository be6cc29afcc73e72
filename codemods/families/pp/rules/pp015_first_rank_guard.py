"""PP015 first-rank-guard: the read of a received key is guarded by a value only the first rank has."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Evidence, Finding, Fix
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE
from ..edits import KeyGuard as KeyGuardEdit
from ..facts.keyguards import KeyGuard
from .holders import held_by

BEFORE = '''\
class ToyPleModel(nn.Module, SupportsPP):
    def forward(self, input_ids, positions, intermediate_tensors=None, per_layer_inputs=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
            per_layer_inputs = self.project_per_layer_inputs(hidden_states, per_layer_inputs)
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            if per_layer_inputs is not None:
                per_layer_inputs = intermediate_tensors["per_layer_inputs"]
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states = layer(positions, hidden_states, per_layer_inputs)
        if not get_pp_group().is_last_rank:
            tensors = {"hidden_states": hidden_states}
            if per_layer_inputs is not None:
                tensors["per_layer_inputs"] = per_layer_inputs
            return IntermediateTensors(tensors)
        return self.norm(hidden_states)
'''

AFTER = '''\
class ToyPleModel(nn.Module, SupportsPP):
    def forward(self, input_ids, positions, intermediate_tensors=None, per_layer_inputs=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
            per_layer_inputs = self.project_per_layer_inputs(hidden_states, per_layer_inputs)
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            if "per_layer_inputs" in intermediate_tensors.tensors:
                per_layer_inputs = intermediate_tensors["per_layer_inputs"]
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states = layer(positions, hidden_states, per_layer_inputs)
        if not get_pp_group().is_last_rank:
            tensors = {"hidden_states": hidden_states}
            if per_layer_inputs is not None:
                tensors["per_layer_inputs"] = per_layer_inputs
            return IntermediateTensors(tensors)
        return self.norm(hidden_states)
'''

RULE = Rule(
    code="PP015",
    name="first-rank-guard",
    summary="On a non-first rank, the read of a received key is guarded by a local that only the "
            "first rank sets, so the key the previous rank sent is dropped.",
    rationale=(
        "A forward's optional argument (`per_layer_inputs=None`) is what the caller hands the first "
        "rank; on a later rank the runner calls the model with `intermediate_tensors` and nothing "
        "sets the local, so `if per_layer_inputs is not None: per_layer_inputs = "
        "intermediate_tensors[\"per_layer_inputs\"]` is never taken there: the key that the "
        "previous rank sent, and that the runner copied into its buffer, is silently dropped, and "
        "the later ranks' layers run without it (wrong output, no error). Gemma4's per-layer inputs "
        "from vLLM 0.21.0 (#40786, where review pointed it out); upstream's fix tests the key "
        "(`if \"per_layer_inputs\" in intermediate_tensors.tensors:`). Reported where the local is "
        "a parameter that defaults to None, nothing on the later ranks' path sets it before the "
        "guard, and the same method sends the key. The fix, applied only where the test is that "
        "comparison alone and the guarded block only reads the key into the local, tests the key "
        "instead; it is safe: the first rank never takes that path (PP=1 is unchanged), and on the "
        "later ranks the block now runs exactly when the key arrived. Any other guard is reported "
        "without a fix (what else it tests is the model's choice)."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)

DEPTH = 3


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for module, cls in ctx.target_classes():
        if not cls.key_guards:
            continue
        ref = ClassRef(module, cls)
        guards = [g for g in cls.key_guards if g.key in _sent(cls.methods.get(g.method))]
        if guards and held_by(ctx, ref, DEPTH, PP_INTERFACE):
            findings.extend(_finding(ctx, ref, g) for g in guards)
    return findings


def _sent(method) -> set[str]:
    return {use.key for use in method.sends if use.key} if method is not None else set()


def _finding(ctx: Context, ref: ClassRef, guard: KeyGuard) -> Finding:
    path = ref.module.path
    message = (
        f"`{guard.local} is not None` guards the read of the received \"{guard.key}\" in "
        f"{ref.cls.name}.{guard.method}, but on a non-first rank `{guard.local}` is the parameter's None "
        f"(only the first rank sets it): the \"{guard.key}\" the previous rank sent is silently dropped"
    )
    fix = None
    if not guard.exact:
        message += "; not auto-fixable: the guard tests more than the local, or its block does more than read the key"
    elif not ctx.editable(path):
        message += f"; not auto-fixable: the guard lives in {path}, outside the checked paths"
    else:
        edit = KeyGuardEdit(path=Path(path), line=guard.line, column=guard.column, key=guard.key,
                            tensors=guard.tensors)
        fix = Fix(
            applicability=Applicability.SAFE,
            description=f"test the key: `if \"{guard.key}\" in {guard.tensors}.tensors:`",
            edits=(edit,),
        )
    evidence = (
        Evidence(Path(path), guard.line, ctx.line(path, guard.line), "guard"),
        Evidence(Path(path), guard.read_line, ctx.line(path, guard.read_line), "read"),
    )
    return RULE.finding(path=path, line=guard.line, column=guard.column, cls=ref.cls.name, message=message,
                        keys=(guard.key,), fix=fix, evidence=evidence)
