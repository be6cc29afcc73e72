"""PP009 tied-embedding-missing: an output head tied to an embedding that is a `PPMissingLayer`
where the tie runs, or a tie that runs on ranks where the head is one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ....findings import Applicability, Evidence, Finding, Fix
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE
from ..edits import Edit, TiedEmbedding, TieOnLastRank
from ..facts.ties import Branch, Cond, Placeholder, Tie, atoms, conj, witness
from .holders import held_by

BEFORE = '''\
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import PPMissingLayer


class StepDecoderModel(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        if get_pp_group().is_first_rank:
            self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
        else:
            self.embed_tokens = PPMissingLayer()


class Step1ForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.model = StepDecoderModel(vllm_config=vllm_config, prefix=f"{prefix}.model")
        if get_pp_group().is_last_rank:
            self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size)
            if config.tie_word_embeddings:
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.model(input_ids, positions, intermediate_tensors)
'''

AFTER = BEFORE.replace(
    "        if get_pp_group().is_first_rank:\n            self.embed_tokens",
    "        if get_pp_group().is_first_rank or (\n"
    "            config.tie_word_embeddings and get_pp_group().is_last_rank\n"
    "        ):\n            self.embed_tokens",
)

RULE = Rule(
    code="PP009",
    name="tied-embedding-missing",
    summary="An output head is tied to an embedding that is a `PPMissingLayer` where the tie runs, "
            "or the tie runs where the head is one.",
    rationale=(
        "`PPMissingLayer` stands for `embed_tokens` off the first rank and for `lm_head` off the "
        "last; it has no `weight` and no `tie_weights`. `self.lm_head.tie_weights(E)` reads "
        "`E.weight`, `self.lm_head.weight = E.weight` too, so a tie that runs on the last rank "
        "while the inner model builds `E` on the first rank only raises AttributeError at start-up "
        "of the last rank whenever `tie_word_embeddings` is set; a tie outside "
        "`if get_pp_group().is_last_rank:` raises it on the other ranks, where `lm_head` is the "
        "placeholder; `self.lm_head = E` and `logits_processor(E, h)` fail at the first "
        "`compute_logits`. Upstream builds the embedding on `is_first_rank or "
        "(config.tie_word_embeddings and is_last_rank)` and ties inside the last-rank branch "
        "(llama.py; Step1, #32511). The fix does the same: it widens the inner model's "
        "`if <group>.is_first_rank:` to `<group>.is_first_rank or (config.tie_word_embeddings and "
        "<group>.is_last_rank)` and moves a tie that runs outside the last-rank branch to the end "
        "of it. Unsafe: the two edits are often in two classes (and files), and the embedding now "
        "also lives on the last rank, where its weight must be loaded. Only when the tie depends on "
        "the `tie_word_embeddings` flag, the inner `__init__` binds `config`, and both branches "
        "are a plain `if <group>.is_first_rank:` / `is_last_rank:` with a `PPMissingLayer` else. "
        "A tie under a helper's verdict (`self.use_tied_lm_head = model_should_use_tied_lm_head("
        "config, quant_config)`, as a fork that keeps a quantized head does) meets the embedding's "
        "placeholder only if the helper can say yes without the flag; its body is not read, so "
        "such a tie is a cannot-verify note, not a finding."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.UNSAFE,
)

DEPTH = 3
LATE = ("alias", "logits")
"""Forms that fail only where the head is used: at `compute_logits`, on the last rank."""


@dataclass(frozen=True)
class Problem:
    """A placeholder (of the `embedding` or the `head`) built in `owner`, met by the tie on `rank`."""

    what: str
    owner: ClassRef
    placeholder: Placeholder
    rank: str

FORMS = {
    "tie_weights": "`{head}.tie_weights({emb})`",
    "weight": "`{head}.weight = {emb}.weight`",
    "alias": "`{head} = {emb}`",
    "logits": "`logits_processor({emb}, ...)`",
}


def check(ctx: Context) -> list[Finding]:
    findings = []
    for module, cls in ctx.target_classes():
        if cls.ties is None or not cls.ties.ties:
            continue
        ref = ClassRef(module, cls)
        for tie in cls.ties.ties:
            problems, computed = _problems(ctx, ref, tie)
            if not (problems or computed) or not held_by(ctx, ref, DEPTH, PP_INTERFACE):
                continue
            findings.append(_finding(ctx, ref, tie, problems) if problems else _unverified(ctx, ref, tie, computed))
    return findings


def _problems(ctx: Context, ref: ClassRef, tie: Tie) -> tuple[list[Problem], list[Problem]]:
    """Each placeholder the tie can meet on some rank of a PP>1 group: the embedding's (every
    form) and, for `tie_weights`, the head's; empty when the tie is sound on every rank. Second,
    those it meets only if a call in its condition can hold without `tie_word_embeddings`: a
    helper that decides whether to tie (`model_should_use_tied_lm_head(config, quant_config)`)
    most often tests that flag first, and the facts do not read its body."""
    candidates = [Problem("embedding", owner, p, "") for owner, p in _placeholders(ctx, ref, tie.embedding)]
    if tie.form == "tie_weights":
        candidates += [Problem("head", owner, p, "") for owner, p in _placeholders(ctx, ref, tie.head)]
    found: list[Problem] = []
    computed: list[Problem] = []
    for problem in candidates:
        cond: Cond = conj(tie.guard, problem.placeholder.guard)
        if tie.form in LATE:
            cond = conj(cond, ("last",))
        rank = witness(cond)
        if rank is None or any(p.what == problem.what for p in found):
            continue
        met = Problem(problem.what, problem.owner, problem.placeholder, rank)
        flagged = conj(_implying_flag(tie.guard), problem.placeholder.guard, *([("last",)] if tie.form in LATE else []))
        if witness(flagged) is not None:
            found.append(met)
        elif all(p.what != problem.what for p in computed):
            computed.append(met)
    return found, [p for p in computed if all(f.what != p.what for f in found)]


def _implying_flag(cond: Cond) -> Cond:
    """`cond` with each call's result taken to imply `tie_word_embeddings`."""
    kind = cond[0]
    if kind == "call":
        return ("and", (cond, ("atom", FLAG)))
    if kind == "not":
        return ("not", _implying_flag(cond[1]))
    if kind in ("and", "or"):
        return (kind, tuple(_implying_flag(c) for c in cond[1]))
    return cond


def _placeholders(ctx: Context, ref: ClassRef, path: tuple[str, ...]) -> list[tuple[ClassRef, Placeholder]]:
    """The `PPMissingLayer` assignments of `self.<path>`'s last attribute in the `__init__`s that
    build it (the owner's MRO, down to a class whose `__init__` calls no base's)."""
    if not path:
        return []
    owners = ctx.resolver.object_classes(ref, ("self", *path[:-1]))
    if not isinstance(owners, list) or not owners:
        return []
    found = []
    chain = ctx.index.mro(owners[0])
    for index, node in enumerate(chain):
        facts = node.cls.ties
        found += [(node, p) for p in (facts.placeholders if facts else ()) if p.attr == path[-1]]
        if facts and path[-1] in facts.built or not _runs_base_init(node, chain[index + 1:]):
            break
    return found


def _runs_base_init(node: ClassRef, bases: list[ClassRef]) -> bool:
    """Whether `node`'s `__init__` (if it has one) calls `super().__init__` or a base's by name."""
    calls = node.cls.init_calls
    if calls is None:
        return True
    names = {base.cls.name for base in bases}
    return any(call == "super" or call.split(".")[-1] in names for call in calls)


def _paths(tie: Tie) -> tuple[str, str, str]:
    """The head's and the embedding's paths as written (`self.lm_head`), and the tie's site."""
    head, emb = ("self." + ".".join(p) for p in (tie.head, tie.embedding))
    return head, emb, FORMS[tie.form].format(head=head, emb=emb)


def _evidence(ctx: Context, ref: ClassRef, tie: Tie, problems: list[Problem]) -> list[Evidence]:
    path = ref.module.path
    evidence = [Evidence(Path(path), tie.line, ctx.line(path, tie.line), "tie")]
    for p in problems:
        op = p.owner.module.path
        evidence.append(Evidence(Path(op), p.placeholder.line, ctx.line(op, p.placeholder.line), "placeholder"))
    return evidence


def _finding(ctx: Context, ref: ClassRef, tie: Tie, problems: list[Problem]) -> Finding:
    head, emb, site = _paths(tie)
    reasons, remedies = [], []
    for p in problems:
        where = f"`self.{p.placeholder.attr} = PPMissingLayer()` in {p.owner.cls.name} (line {p.placeholder.line})"
        if p.what == "embedding":
            lacks = "`quant_method` (first compute_logits)" if tie.form in LATE else "`weight`"
            reasons.append(f"on the {p.rank} PP rank {emb} can be a PPMissingLayer ({where}), which has no {lacks}")
            remedies.append("build the embedding on `is_first_rank or (config.tie_word_embeddings and is_last_rank)`")
        else:
            reasons.append(f"on the {p.rank} PP rank {head} is a PPMissingLayer ({where}), which has no "
                           "`tie_weights`")
            remedies.append("tie inside `if get_pp_group().is_last_rank:`")
    message = (
        f"{site} in {ref.cls.name} meets a placeholder: " + "; ".join(reasons)
        + ": AttributeError at start-up; " + " and ".join(remedies)
    )
    planned = _plan(ctx, ref, tie, problems)
    fix = None
    if isinstance(planned, str):
        message += f"; not auto-fixable: {planned}"
    else:
        fix = Fix(applicability=Applicability.UNSAFE, description=" and ".join(remedies), edits=planned)
    return RULE.finding(path=ref.module.path, line=tie.line, column=tie.column, cls=ref.cls.name, message=message,
                        keys=(f"{tie.form}[{emb}]",), fix=fix, evidence=_evidence(ctx, ref, tie, problems))


FLAG = "tie_word_embeddings"


def _unverified(ctx: Context, ref: ClassRef, tie: Tie, computed: list[Problem]) -> Finding:
    """A note: the tie meets a placeholder only if a call in its condition holds without the flag."""
    _, emb, site = _paths(tie)
    calls = " / ".join(f"`{name}`" for name in sorted(atoms(tie.guard, ("call",))))
    owners = ", ".join(dict.fromkeys(f"{p.owner.cls.name} (line {p.placeholder.line})" for p in computed))
    message = (
        f"cannot verify {site} in {ref.cls.name}: it runs under {calls}, and the placeholder it can meet "
        f"({owners}) is avoided only where `{FLAG}` is set; whether the call implies that flag is not "
        "read; left alone"
    )
    return RULE.finding(path=ref.module.path, line=tie.line, column=tie.column, cls=ref.cls.name, message=message,
                        keys=(f"{tie.form}[{emb}]",), evidence=_evidence(ctx, ref, tie, computed),
                        note="cannot-verify")


def _plan(ctx: Context, ref: ClassRef, tie: Tie, problems: list[Problem]) -> tuple[Edit, ...] | str:
    """Upstream's two edits where this tie needs them, or why they cannot be written: the tie
    moves into the last-rank branch when it runs off the last rank; the embedding's first-rank
    branch widens when the embedding is missing where the tie runs."""
    if FLAG not in atoms(tie.guard):
        return f"the tie does not depend on `{FLAG}` (build the embedding on the last rank by hand)"
    planned: list[Edit] = []
    tie_guard = conj(tie.guard, ("last",)) if tie.form in LATE else tie.guard
    if witness(conj(tie.guard, ("not", ("last",)))) is not None and tie.form not in LATE:
        target = _branch(ref, tie.head, "last")
        if target is None or not tie.alone or (target.line, target.column) >= tie.top:
            return "the tie is not a statement of its own after an `if <group>.is_last_rank:` that builds the head"
        planned.append(TieOnLastRank(path=Path(ref.module.path), line=tie.top[0], column=tie.top[1],
                                     target_line=target.line, target_column=target.column))
        tie_guard = conj(tie_guard, ("last",))
    for p in problems:
        if p.what != "embedding":
            continue
        branch = _branch(p.owner, (p.placeholder.attr,), "first")
        facts = p.owner.cls.ties
        if branch is None or branch.placeholder_line != p.placeholder.line:
            return f"{p.owner.cls.name} does not build the embedding under a plain `if <group>.is_first_rank:`"
        if facts is None or "config" not in facts.names:
            return f"{p.owner.cls.name}.__init__ binds no `config`"
        if not ctx.editable(p.owner.module.path):
            return f"{p.owner.cls.name} lives in {p.owner.module.path}, outside the checked paths"
        wider = ("not", ("or", (("first",), ("and", (("atom", FLAG), ("last",))))))
        if witness(conj(tie_guard, wider)) is not None:
            return "the widened condition would still miss a rank where the tie runs"
        planned.append(TiedEmbedding(path=Path(p.owner.module.path), line=branch.line, column=branch.column,
                                     flag=f"config.{FLAG}"))
    return tuple(planned)


def _branch(ref: ClassRef, attr: tuple[str, ...], rank: str) -> Branch | None:
    facts = ref.cls.ties
    if facts is None or len(attr) != 1:
        return None
    return next((b for b in facts.branches if b.attr == attr[0] and b.rank == rank), None)

