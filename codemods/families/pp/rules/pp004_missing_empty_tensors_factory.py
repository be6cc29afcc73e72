"""PP004 missing-empty-tensors-factory: a SupportsPP entry class without a working producer."""

from __future__ import annotations

import re
from pathlib import Path

from ....analysis.traffic import takes_three
from ....facts import Producer
from ....findings import Applicability, Evidence, Finding, Fix
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE, PP_LIST, PRODUCER
from ..edits import InsertDelegation

BEFORE = '''\
class KimiLinearModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
        )


class KimiLinearForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = KimiLinearModel(vllm_config.model_config.hf_config)

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.model(input_ids, positions, intermediate_tensors)
'''

AFTER = '''\
class KimiLinearModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
        )


class KimiLinearForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = KimiLinearModel(vllm_config.model_config.hf_config)
        self.make_empty_intermediate_tensors = (
            self.model.make_empty_intermediate_tensors
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.model(input_ids, positions, intermediate_tensors)
'''

RULE = Rule(
    code="PP004",
    name="missing-empty-tensors-factory",
    summary="A SupportsPP entry class exposes no make_empty_intermediate_tensors.",
    rationale=(
        "The runner calls `model.make_empty_intermediate_tensors(...)` on every non-first rank at "
        "start-up. `supports_pp()` only checks that `SupportsPP` is in the MRO and that forward "
        "accepts `intermediate_tensors`, so a wrapper that forgot the delegation passes every check "
        "and fails at start-up of rank 1: the Protocol stub returns None (vLLM <= 0.27) or "
        "AttributeError (later). Real cases: Kimi-Linear's wrapper, multimodal wrappers without "
        "`self.make_empty_intermediate_tensors = self.language_model.make_empty_intermediate_tensors`, "
        "a misspelled attribute name, a subclass whose `nn.Module.__init__(self)` skips the base "
        "`__init__` that delegated. The fix appends that delegation line to `__init__` when the "
        "forward hands `intermediate_tensors` to exactly one submodule: safe when the submodule's "
        "class is known and has a producer, unsafe when it is built dynamically (by the model "
        "registry, or through `self.model_cls(...)` / `self._init_model(...)`, which a subclass can "
        "change) or its producer can "
        "only come from a base that resolves to no class. The delegation runs for every entry that "
        "inherits that `__init__`: none is written when one of them builds the submodule as a class "
        "without a producer (it hands another `model_type` on, by keyword or by place), and it is "
        "unsafe when what one of them builds is not known. A class with such a base (a plugin's "
        "`LlamaForCausalLM` subclass checked without vLLM beside it, a name its module lacks) may "
        "get the producer from it: it is left unverified, and `--verbose` says why. A placeholder "
        "(`self.make_empty_intermediate_tensors = lambda: None`, a method taking no arguments) "
        "exposes none that works either: the runner's call with `(batch_size, dtype, device)` "
        "raises TypeError; so is one that returns None (`lambda *args, **kwargs: None`: the runner "
        "gets no buffers). An expression that picks the producer (`A.make_empty_intermediate_tensors "
        "if cond else (lambda: None)`, `getattr(A, ..., None) or B`, `cond and A.make_... or B`) is "
        "resolved arm by arm: an arm that some configuration takes (an `or` operand after a bound "
        "method never runs; `hasattr`/`getattr` are told by whether the object's class has one) and "
        "that ends at such a placeholder, at the interface's stub `SupportsPP.make_empty_intermediate_tensors` "
        "or at a class that defines none is reported there, with the condition that takes it (not "
        "when that condition tests whether a submodule was built, `self.talker is None`: which "
        "configurations build none is not told here). These "
        "are reported without a fix, since what they should delegate to is a modelling decision."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
    traces=True,
)


def check(ctx: Context) -> list[Finding]:
    """One finding per class that lacks a producer, except subclasses of a class whose fix
    (a delegation in its `__init__`) they inherit, that `__init__` running for them too."""
    missing = [
        ref for ref in ctx.entries
        if not ref.header.is_protocol and PP_INTERFACE in ctx.index.base_names(ref)
        and ctx.resolver.allocation(ref).missing
    ]
    findings = {ref: _finding(ctx, ref) for ref in missing}
    fixed_bases = {ref for ref, f in findings.items() if f.fix}
    kept = [
        f for ref, f in findings.items()
        if not any(base in fixed_bases and base.key in ctx.index.initialized(ref) for base in ctx.index.mro(ref)[1:])
    ]
    placeholders: dict[tuple[str, str], set[int]] = {}
    for ref in ctx.entries:
        if ref in findings or "SupportsPP" not in ctx.index.base_names(ref):
            continue
        found = _broken(ctx, ref)
        if found and found[1].line not in placeholders.get(found[0].key, ()):
            placeholders.setdefault(found[0].key, set()).add(found[1].line)
            kept.append(_broken_finding(ctx, ref, *found))
    return kept


def _broken(ctx: Context, ref: ClassRef) -> tuple[ClassRef, Producer, str] | None:
    """The producer that takes effect for `ref` (or an arm of it that is taken under some
    configuration) when it gives the runner no buffers, with why."""
    for node in ctx.index.mro(ref):
        producers = [] if node.header.is_protocol else ctx.resolver.effective(ref, node)
        if not producers:
            continue
        for producer in producers:
            live = ctx.resolver.taken(ref, producer) and not _on_existence(ctx, ref, producer)
            why = _why_broken(ctx, ref, node, producer) if live else ""
            if why:
                return node, producer, why
        return None
    return None


def _on_existence(ctx: Context, ref: ClassRef, producer: Producer) -> bool:
    """Whether a condition that takes the producer tests whether an attribute is built
    (`self.talker is not None`, `not self.thinker` for a submodule): which configurations build none
    is not told here (each stage may build the one the other arm needs)."""
    submodules = {f"self.{attr}" for node in ctx.index.mro(ref) for attr in node.cls.submodules}
    return any(_EXISTENCE.search(cond) or cond in submodules for cond, _ in producer.guard)


_EXISTENCE = re.compile(r"\bself(\.\w+)+ is (not )?None\b")


def _why_broken(ctx: Context, ref: ClassRef, node: ClassRef, producer: Producer) -> str:
    method = node.cls.methods.get(producer.method) if producer.kind == "method" else None
    if producer.kind == "placeholder" or (
        method is not None and not takes_three(method.params, bound="<locals>" not in producer.method)
    ):
        return "is a placeholder that cannot take the runner's (batch_size, dtype, device)"
    if producer.kind == "none":
        return "gives None, not the buffers the runner asks for"
    if producer.kind == "stub":
        stub = f"`{PP_INTERFACE}.{PRODUCER}`"
        return f"is the interface's stub {stub}, which gives None up to vLLM 0.27 and is absent later"
    if producer.kind == "delegate" and producer.target[:1] != ("super",):
        owners = ctx.resolver.object_classes(ref, producer.target)
        if isinstance(owners, list) and owners and ctx.resolver.delegated(ref, node, producer.target).missing:
            return f"delegates to `{'.'.join(producer.target)}`, whose class {owners[0].cls.name} defines none"
    return ""


_LABEL = {"delegate": "delegation", "stub": "stub"}


def _broken_finding(ctx: Context, ref: ClassRef, owner: ClassRef, producer: Producer, why: str) -> Finding:
    path = owner.module.path
    return RULE.finding(
        path=path, line=producer.line, column=producer.column, cls=ref.cls.name,
        message=f"make_empty_intermediate_tensors{_when(producer)} {why} (fails at start-up of rank 1); "
        "not auto-fixable: delegate it to the inner model's or build it with make_empty_intermediate_tensors_factory",
        evidence=(
            Evidence(Path(path), producer.line, ctx.line(path, producer.line), _LABEL.get(producer.kind, "placeholder")),
        ),
    )


def _when(producer: Producer) -> str:
    """The conditions that take a producer, as a clause: `, when not `self.stage == "thinker"`,`."""
    tests = [f"`{cond}`" if holds else f"not `{cond}`" for cond, holds in producer.guard]
    tests += [f"`{'.'.join(obj)}` {'has' if has else 'lacks'} one" for obj, has in producer.needs]
    return f", when {' and '.join(tests)}," if tests else ""


def _finding(ctx: Context, ref: ClassRef) -> Finding:
    path = ref.module.path
    misspelled = [p for node in ctx.index.mro(ref) for p in node.cls.misspelled_producer]
    kind = f"class that `{PP_LIST}` allows PP>1" if ref.key in ctx.index.pp_listed else "SupportsPP class"
    message = f"{kind} has no make_empty_intermediate_tensors (fails at start-up of rank 1)"
    evidence = [Evidence(Path(path), ref.cls.line, ctx.line(path, ref.cls.line), "class")]
    if misspelled:
        message += f"; `self.{misspelled[0].attr}` looks like a misspelling of it"
        evidence.append(Evidence(Path(path), misspelled[0].line, ctx.line(path, misspelled[0].line), "misspelled"))
    fix, why = _plan(ctx, ref)
    if why:
        message += f"; not auto-fixable: {why}"
    return RULE.finding(
        path=path, line=ref.cls.line, column=ref.cls.column, cls=ref.cls.name, message=message,
        fix=fix, evidence=evidence,
    )


def _plan(ctx: Context, ref: ClassRef) -> tuple[Fix | None, str]:
    found = ctx.index.find_method(ref, "forward")
    if found is None:
        return None, "no forward that takes intermediate_tensors"
    targets = {
        call.target[1] for call in found.fn.calls
        if not call.relay and len(call.target) >= 2 and call.target[0] == "self" and call.target[1] in _submodules(ctx, ref)
    }
    if len(targets) != 1:
        return None, "forward does not hand intermediate_tensors to exactly one submodule"
    attr = targets.pop()
    if attr not in ref.cls.init_last_assign:
        return None, f"`self.{attr}` is not assigned at the top level of {ref.cls.name}.__init__"
    owners = ctx.resolver.object_classes(ref, ("self", attr))
    built = [sub.ctor for node in ctx.index.mro(ref) for sub in node.cls.submodules.get(attr, []) if sub.dynamic]
    if isinstance(owners, str) and "dynamically" in owners:
        applicability, note = Applicability.UNSAFE, f" (unsafe: {owners})"
    elif isinstance(owners, str) or not owners:
        return None, f"the class of `self.{attr}` is not known ({owners or 'no class found'})"
    elif (inner := ctx.resolver.allocation(owners[0])).missing:
        return None, f"`self.{attr}` has no make_empty_intermediate_tensors either"
    elif inner.opaque:
        applicability = Applicability.UNSAFE
        note = f" (unsafe: {owners[0].cls.name} has one only if base `{inner.opaque[0]}`, which resolves to no class here, defines it)"
    elif built:
        applicability = Applicability.UNSAFE
        named = next((ctor for ctor in built if ctor.startswith("self.")), None)
        note = (f" (unsafe: self.{attr} is built as {owners[0].cls.name} through {named}, which a subclass may change)"
                if named else
                f" (unsafe: self.{attr} is built by the model registry, as {owners[0].cls.name} unless configured otherwise)")
    else:
        applicability, note = Applicability.SAFE, ""
    builder = next(node for node in ctx.index.mro(ref) if attr in node.cls.submodules)
    for sub in _inheritors(ctx, ref):
        theirs = ctx.resolver.built_by(sub, builder, attr)
        if isinstance(theirs, str) or not theirs or any(ctx.resolver.allocation(c).opaque for c in theirs):
            if applicability is Applicability.SAFE:
                applicability = Applicability.UNSAFE
                note = f" (unsafe: what self.{attr} is in subclass {sub.cls.name} is not known)"
        elif lacking := [c for c in theirs if ctx.resolver.allocation(c).missing]:
            return None, (f"subclass {sub.cls.name} builds `self.{attr}` as {lacking[0].cls.name}, which has "
                          f"none either: the delegation would fail in its __init__")
    if not ctx.editable(ref.module.path):
        return None, f"{ref.module.path} is outside the checked paths"
    line = max(ref.cls.init_last_build, ref.cls.init_last_assign[attr])
    return Fix(
        applicability=applicability,
        description=f"delegate to self.{attr}.make_empty_intermediate_tensors in __init__{note}",
        edits=(InsertDelegation(path=Path(ref.module.path), line=line, column=0, cls=ref.cls.name, attr=attr),),
    ), ""


def _inheritors(ctx: Context, ref: ClassRef) -> list[ClassRef]:
    """The entries that run `ref`'s `__init__` when built, and so would run a delegation
    written there."""
    return [sub for sub in ctx.entries if sub != ref and ref in ctx.index.mro(sub)[1:]
            and ref.key in ctx.index.initialized(sub)]


def _submodules(ctx: Context, ref: ClassRef) -> set[str]:
    return {attr for node in ctx.index.mro(ref) for attr in node.cls.submodules}
