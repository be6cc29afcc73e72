"""PP014 whole-layer-loop: a loop over every entry of a split layer list reads the entries' attributes."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from ....findings import Applicability, Evidence, Finding, Fix
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE
from ..edits import SkipPlaceholder
from ..facts.layerloops import LayerLoop
from .holders import held_by
from .release import release_text

BEFORE = '''\
from vllm.model_executor.models.utils import make_layers


class ToyMoeModel(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: ToyMoeDecoderLayer(config, prefix=prefix), prefix=f"{prefix}.layers"
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        ...

    def update_physical_experts_metadata(self, num_physical_experts, num_local_physical_experts):
        for layer in self.layers:
            if isinstance(layer.mlp, ToyMoeBlock):
                layer.mlp.n_physical_experts = num_physical_experts
                layer.mlp.experts.update_expert_map()
'''

AFTER = '''\
from vllm.model_executor.models.utils import PPMissingLayer, make_layers


class ToyMoeModel(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: ToyMoeDecoderLayer(config, prefix=prefix), prefix=f"{prefix}.layers"
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        ...

    def update_physical_experts_metadata(self, num_physical_experts, num_local_physical_experts):
        for layer in self.layers:
            if isinstance(layer, PPMissingLayer):
                continue
            if isinstance(layer.mlp, ToyMoeBlock):
                layer.mlp.n_physical_experts = num_physical_experts
                layer.mlp.experts.update_expert_map()
'''

RULE = Rule(
    code="PP014",
    name="whole-layer-loop",
    summary="A method loops over every entry of a layer list that `make_layers` split, and reads an "
            "attribute of each entry without skipping `PPMissingLayer`.",
    rationale=(
        "`make_layers` returns a full-length `ModuleList` whose entries outside the rank's "
        "`[start_layer, end_layer)` are `PPMissingLayer`, an `nn.Identity` without the layer's "
        "attributes. A loop over all of `self.layers` (or a wrapper's `self.model.layers`, or "
        "`enumerate` of one) that reads `layer.mlp` raises AttributeError on every rank with PP>1 "
        "when the method runs: at construction for `__init__` and what it calls, at an elastic-EP "
        "rescale for `update_physical_experts_metadata` (the loops upstream fixed in Lfm2Moe, "
        "K2-Horizon and PhiMoE by skipping the placeholder). A loop over "
        "`self.layers[self.start_layer:self.end_layer]` or `islice(...)`, one that skips the entry "
        "first (`isinstance(layer, PPMissingLayer)`, a filter on the layer's class, `hasattr`), "
        "and reads of what every `nn.Module` has (`parameters()`, `training`) are left alone. "
        "Where the release refuses PP>1 for the only configuration that runs the method (elastic EP "
        "raises ValueError with PP>1 from vLLM 0.21.0), the finding is a warning. The fix puts "
        "`if isinstance(layer, PPMissingLayer): continue` first in the loop, as upstream does; it is "
        "safe: at PP=1 no entry is a placeholder, and at PP>1 the loop, which raised, acts on the "
        "rank's own layers. A comprehension is reported without a fix (its filter is the model's "
        "choice), and so is a loop whose `PPMissingLayer` cannot be imported from where the model's "
        "`make_layers` comes from."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)

DEPTH = 3
SPLITTER = "make_layers"
PLACEHOLDER = "PPMissingLayer"
UTILS = "vllm.model_executor.models.utils"
CONSTRUCTION = "__init__"
CALLERS = {
    "update_physical_experts_metadata": (
        "elastic EP rescaling", ("config", "parallel.py"),
        re.compile(r"if self\.enable_elastic_ep:\n(?:(?: {12,}.*)?\n)*? {12,}if self\.pipeline_parallel_size > 1:"),
    ),
}
"""Methods that only one configuration runs: its words, the release file that may refuse it with
PP>1, and the refusal's text there."""


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    refused: dict[str, bool] = {}
    for module, cls in ctx.target_classes():
        facts = cls.layer_loops
        if facts is None:
            continue
        ref = ClassRef(module, cls)
        at_init = _run_by_init(dict(facts.calls))
        for loop in facts.loops:
            holder = _split_holder(ctx, ref, loop.chain)
            if holder is None or not held_by(ctx, ref, DEPTH, PP_INTERFACE):
                continue
            if loop.method not in refused:
                refused[loop.method] = _refused(ctx, loop.method)
            findings.append(_finding(ctx, ref, holder, loop, loop.method in at_init, refused[loop.method]))
    return _one_source_per_file(findings)


def _one_source_per_file(findings: list[Finding]) -> list[Finding]:
    """A file binds `PPMissingLayer` once: where its skips would need it from two modules (two
    splitters), none is written."""
    sources: dict[Path, set[str]] = {}
    for finding in findings:
        for edit in finding.fix.edits if finding.fix else ():
            if isinstance(edit, SkipPlaceholder) and edit.source:
                sources.setdefault(edit.path, set()).add(edit.source)
    mixed = {path for path, found in sources.items() if len(found) > 1}
    return [
        replace(f, fix=None, message=f"{f.message}; not auto-fixable: the file's loops need the `{PLACEHOLDER}` "
                f"of {' and of '.join(sorted(sources[f.path]))}, and it can import the name from one of them only")
        if f.fix and f.path in mixed else f
        for f in findings
    ]


def _package(module: str, path: str) -> str:
    """The dotted package a module's relative imports start from."""
    return module if path.endswith("__init__.py") else module.rpartition(".")[0]


def _run_by_init(calls: dict[str, frozenset[str]]) -> set[str]:
    """`__init__` and the methods it calls on `self`, transitively."""
    reached = {CONSTRUCTION}
    pending = [CONSTRUCTION]
    while pending:
        for name in calls.get(pending.pop(), ()):
            if name in calls and name not in reached:
                reached.add(name)
                pending.append(name)
    return reached


def _split_holder(ctx: Context, ref: ClassRef, chain: tuple[str, ...]) -> tuple[ClassRef, int] | None:
    """The class whose `self.<last of chain>` is built by `make_layers` (and the line): `ref`
    itself or what `self.<chain before it>` resolves to, in `ref` or, for a mixin that does not
    build it (`QwenNextMixtureOfExperts`), in a checked class that inherits the method from it;
    None when no class splits that list."""
    *path, attr = chain
    return _split_in(ctx, ref, tuple(path), attr) or next(
        (found for s in ctx.subjects if ref in ctx.index.mro(s)[1:] and (found := _split_in(ctx, s, tuple(path), attr))),
        None,
    )


def _split_in(ctx: Context, instance: ClassRef, path: tuple[str, ...], attr: str) -> tuple[ClassRef, int] | None:
    classes = ctx.resolver.object_classes(instance, ("self", *path))
    for holder in classes if isinstance(classes, list) else ():
        for node in ctx.index.mro(holder):
            splits = node.cls.loading.splits if node.cls.loading else ()
            line = next((s.line for s in splits if s.attr == attr and s.kind == SPLITTER), 0)
            if line:
                return node, line
    return None


def _refused(ctx: Context, method: str) -> bool:
    """Whether the release refuses PP>1 for the one configuration that runs `method`."""
    if method not in CALLERS:
        return False
    _, parts, refusal = CALLERS[method]
    text = release_text(ctx, *parts)
    return bool(text and refusal.search(text))


def _finding(ctx: Context, ref: ClassRef, holder: tuple[ClassRef, int], loop: LayerLoop, at_init: bool,
             latent: bool) -> Finding:
    path = ref.module.path
    split, split_line = holder
    listed = "self." + ".".join(loop.chain)
    if at_init:
        when = "at construction"
    elif loop.method in CALLERS:
        when = f"when {CALLERS[loop.method][0]} runs {loop.method}"
    else:
        when = f"when {loop.method} runs"
    message = (
        f"{'latent: ' if latent else ''}`{loop.read}` in {ref.cls.name}.{loop.method} reads every entry of "
        f"`{listed}` (built by make_layers in {split.cls.name}, line {split_line}) without skipping "
        f"`{PLACEHOLDER}`: AttributeError on every PP rank with PP>1 {when}"
    )
    if latent:
        message += f" (this release refuses PP>1 for {CALLERS[loop.method][0]})"
    fix = None
    source = _placeholder_source(ctx, ref, split)
    if not loop.body_line:
        message += f"; not auto-fixable: a {'comprehension' if loop.kind != 'loop' else 'one-line loop'} (filter the placeholder by hand)"
    elif not ctx.editable(path):
        message += f"; not auto-fixable: the loop lives in {path}, outside the checked paths"
    elif source is None:
        message += f"; not auto-fixable: where {split.module.module}'s make_layers (and its `{PLACEHOLDER}`) comes from is not known"
    else:
        edit = SkipPlaceholder(path=Path(path), line=loop.body_line, column=loop.body_column, var=loop.var,
                               source=source, package=_package(ref.module.module, path))
        fix = Fix(
            applicability=Applicability.SAFE,
            description=f"skip the placeholder first: `if isinstance({loop.var}, {PLACEHOLDER}): continue`",
            edits=(edit,),
        )
    sp = split.module.path
    evidence = (
        Evidence(Path(path), loop.read_line, ctx.line(path, loop.read_line), "read"),
        Evidence(Path(sp), split_line, ctx.line(sp, split_line), "split"),
    )
    return RULE.finding(path=path, line=loop.line, column=loop.column, cls=ref.cls.name, message=message,
                        keys=(loop.method, loop.read, loop.kind), fix=fix, evidence=evidence, latent=latent)


def _placeholder_source(ctx: Context, ref: ClassRef, split: ClassRef) -> str | None:
    """Where the loop's module takes `PPMissingLayer` from: "" when it binds the name already,
    else the module the splitting class imports `make_layers` from (vLLM's for any of vLLM's
    modules); for a module with its own `make_layers`, where its `PPMissingLayer` is; None when
    not known."""
    if PLACEHOLDER in ref.module.imports or PLACEHOLDER in ref.module.classes:
        return ""
    sources = {target for target, attr in split.module.imports.get(SPLITTER, ()) if attr == SPLITTER}
    if len(sources) == 1:
        source = sources.pop()
        return UTILS if source == "vllm" or source.startswith("vllm.") else source
    if sources:
        return None
    if PLACEHOLDER in split.module.classes:
        return split.module.module
    bound = {target for target, attr in split.module.imports.get(PLACEHOLDER, ()) if attr == PLACEHOLDER}
    return bound.pop() if len(bound) == 1 else None
