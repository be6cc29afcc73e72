"""PP008 missing-layer-lookup: a weight loader looks up a parameter this PP rank may not hold."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from ....facts import ModuleFacts
from ....findings import Applicability, Evidence, Finding, Fix
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE
from ..edits import MissingGuard
from ..facts.loading import SPLITTERS, Lookup, Split
from .holders import held_by
from .loaders import ENTRY, Reached, reached, unguarded

BEFORE = '''\
from vllm.model_executor.models.utils import is_pp_missing_parameter, make_layers


class ExaoneModel(nn.Module, SupportsPP):
    def __init__(self, config, quant_config, prefix=""):
        super().__init__()
        self.quant_config = quant_config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: ExaoneDecoderLayer(config), prefix=f"{prefix}.layers"
        )

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if scale_name := self.quant_config.get_cache_scale(name):
                param = params_dict[scale_name]
                param.weight_loader(param, loaded_weight)
                continue
            if is_pp_missing_parameter(name, self):
                continue
            param = params_dict[name]
            param.weight_loader(param, loaded_weight)
'''

AFTER = '''\
from vllm.model_executor.models.utils import is_pp_missing_parameter, make_layers


class ExaoneModel(nn.Module, SupportsPP):
    def __init__(self, config, quant_config, prefix=""):
        super().__init__()
        self.quant_config = quant_config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: ExaoneDecoderLayer(config), prefix=f"{prefix}.layers"
        )

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if scale_name := self.quant_config.get_cache_scale(name):
                if is_pp_missing_parameter(scale_name, self):
                    continue
                param = params_dict[scale_name]
                param.weight_loader(param, loaded_weight)
                continue
            if is_pp_missing_parameter(name, self):
                continue
            param = params_dict[name]
            param.weight_loader(param, loaded_weight)
'''

RULE = Rule(
    code="PP008",
    name="missing-layer-lookup",
    summary="A weight loader indexes the parameter dict without skipping layers another PP rank holds.",
    rationale=(
        "`make_layers` gives each rank only its share of the layers and fills the rest with "
        "`PPMissingLayer` (no parameters); `PPMissingLayer()` also stands for `embed_tokens` off the "
        "first rank and `norm`/`lm_head` off the last. Every rank reads the whole checkpoint, so a "
        "`params_dict[name]` in `load_weights`, or in what it calls (a helper, a closure, any "
        "method of a submodule: that method looks up the submodule's own parameters), that no "
        "`is_pp_missing_parameter(name, self)` / `name not in params_dict` skip precedes raises "
        "KeyError at start-up on every rank that lacks the layer: the KV-cache-scale branch "
        "(`quant_config.get_cache_scale(name)`) of dozens of loaders up to vLLM 0.21.0, "
        "GraniteMoeHybrid's `_load` helper (#50961), the `load_weight` of Voxtral's audio tower, "
        "whose Whisper encoder `make_layers` splits. A language model built at run time "
        "(`init_vllm_registered_model(...)` with the architecture the config names, or a helper "
        "named for a model) hides its `make_layers` from the analysis: its layers count as split "
        "when the loaders of that instance skip missing layers in another branch "
        "(`is_pp_missing_parameter(name, self)`), which says its names reach them (a loader that "
        "never skips may see only a tower's names). The fix skips the name right before the "
        "lookup (`return` in a helper without a loop, unless the helper returns a value its callers "
        "use). When the only split modules are an "
        "encoder tower built with `make_layers`, the finding is reported without a fix: the tower "
        "runs whole on the ranks that need it (upstream builds it unsplit, `enable_pp=False`), and "
        "skipping would drop its layers silently. The "
        "check is imported from where the model's splitter comes from: a fork with its own "
        "`make_layers` and `PPMissingLayer` (vllm-mindspore, aphrodite) has its own "
        "`is_pp_missing_parameter`, and vLLM's would not know its placeholders; where that is not "
        "known, the finding has no fix."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)

TOWER = re.compile(r"Encoder|Vision|Visual|Audio|Tower|ViT|Speech", re.I)
DEPTH = 3
SPLIT_WORDS = "|".join(SPLITTERS)
"""A class whose text has none of these has no split (`loading_facts` looks for nothing else)."""
GUARD = "is_pp_missing_parameter"
UTILS = "vllm.model_executor.models.utils"
RUN_TIME = "a model built at run time"
"""The kind of a split the index cannot see: a submodule built by name or by a helper."""
HELPER = re.compile(r"model$", re.I)
"""A builder whose name says it builds a model (`build_text_model`), when the index cannot tell which."""

Source = tuple[ClassRef, Split]


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, int, int]] = set()
    splits: dict[tuple[str, str], list[Source]] = {}
    for module, cls in ctx.target_classes():
        if not cls.loading or ENTRY not in cls.loading.loaders:
            continue
        ref = ClassRef(module, cls)
        loaders = reached(ctx, ref)
        held: bool | None = None
        for each, lookup in unguarded(ctx, loaders, ref):
            where = (each.owner.module.path, lookup.line, lookup.column)
            if where in seen or each.via and lookup.given:
                continue  # a submodule's method handed its caller's dict looks up the caller's names
            skip = next((r for r in loaders.values() if r.obj == each.obj and r.loader.checks), None)
            sources = [s for s in _split_sources(ctx, each.obj, splits, DEPTH) if skip or s[1].kind != RUN_TIME]
            if not sources:
                continue
            held = held_by(ctx, ref, DEPTH, PP_INTERFACE) if held is None else held
            if not held:
                break
            seen.add(where)
            findings.append(_finding(ctx, ref, each, lookup, sources, skip))
    return _one_source_per_file(findings)


def _one_source_per_file(findings: list[Finding]) -> list[Finding]:
    """A file binds `is_pp_missing_parameter` once: where its loaders need the checks of two
    splitters (two classes, two modules), none of its skips is written."""
    sources: dict[Path, set[str]] = {}
    for finding in findings:
        for edit in finding.fix.edits if finding.fix else ():
            if isinstance(edit, MissingGuard):
                sources.setdefault(edit.path, set()).add(edit.source)
    mixed = {path: found for path, found in sources.items() if len(found) > 1}
    return [
        replace(f, fix=None, message=f"{f.message}; not auto-fixable: the file's loaders need the `{GUARD}` "
                f"of {' and of '.join(sorted(mixed[f.path]))}, and it can import the name from one of them only")
        if f.fix and f.path in mixed else f
        for f in findings
    ]


def _split_sources(ctx: Context, ref: ClassRef, memo: dict, depth: int) -> list[Source]:
    """Where `ref`'s parameters can go missing: `make_layers` / `PPMissingLayer` in its MRO or
    in the classes of its submodules (`depth` levels down), and the submodules built at run time
    (by name, or by a helper), whose class the index cannot tell (`RUN_TIME`, last)."""
    if ref.key in memo:
        return memo[ref.key]
    memo[ref.key] = []
    found: list[Source] = []
    hidden: list[Source] = []
    attrs: dict[str, ClassRef] = {}
    for node in ctx.index.mro(ref):
        if not depth and not node.may_hold(SPLIT_WORDS):
            continue  # neither a split nor (at the last level) submodules to read: left unparsed
        if node.cls.loading:
            found.extend((node, s) for s in node.cls.loading.splits)
        for attr in node.cls.submodules:
            attrs.setdefault(attr, node)
    if depth > 0:
        for attr, node in sorted(attrs.items()):
            classes = ctx.resolver.object_classes(ref, ("self", attr))
            if isinstance(classes, str):
                hidden.extend((node, split) for split in _run_time(node, attr))
            for sub in classes if isinstance(classes, list) else ():
                if sub != ref:
                    found.extend(_split_sources(ctx, sub, memo, depth - 1))
    memo[ref.key] = found = [s for s in found if s[1].kind != RUN_TIME] + hidden + [
        s for s in found if s[1].kind == RUN_TIME]
    return found


def _run_time(node: ClassRef, attr: str) -> list[Split]:
    """`self.<attr>` as `node` builds it at run time, by a function or method named for a model:
    a registered architecture (`init_vllm_registered_model`), `self._init_model(...)`,
    `build_text_model(...)`."""
    return [
        Split(attr, sub.line, RUN_TIME, sub.ctor) for sub in node.cls.submodules[attr]
        if HELPER.search(name := sub.ctor.rsplit(".", 1)[-1]) and not name[:1].isupper()
    ]


def _finding(ctx: Context, ref: ClassRef, each: Reached, lookup: Lookup, sources: list[Source],
             skip: Reached | None) -> Finding:
    owner, loader = each.owner, each.loader
    path = owner.module.path
    where = f"{owner.cls.name}.{loader.name}"
    if each.via:
        where += f" (which {ref.cls.name}.{ENTRY} calls as `{each.via}`)"
    holder, split = next(((h, s) for h, s in sources if not _tower(h)), sources[0])
    what = f"`self.{split.attr}`" if split.attr else "a module"
    if split.kind == RUN_TIME and skip:
        built = (f"{what} = {split.callee}(...) in {holder.cls.name} (line {split.line}) is {RUN_TIME}, whose "
                 f"layers the loader expects to go missing: {skip.owner.cls.name}.{skip.loader.name} skips them "
                 f"with `{GUARD}` (line {skip.loader.checks})")
    else:
        built = f"{what} = {split.kind}(...) in {holder.cls.name} (line {split.line})"
    towers_only = all(_tower(h) for h, _ in sources)
    message = (
        f"`params_dict[{lookup.key}]` in {where} is not preceded by "
        f"`is_pp_missing_parameter({lookup.key}, self)`: KeyError while loading weights on a PP "
        f"rank that lacks the layer ({built})"
    )
    fix = None
    if towers_only:
        message += (
            "; not auto-fixable: the split modules are an encoder tower, which should not be split "
            "by make_layers (a skip would drop its layers silently)"
        )
    elif not lookup.fixable:
        message += "; not auto-fixable: the lookup is inside a comprehension or lambda"
    elif lookup.exit == "return" and loader.name == ENTRY:
        message += "; not auto-fixable: the lookup is outside any loop of load_weights"
    elif lookup.exit == "return" and loader.returns_value:
        message += f"; not auto-fixable: a bare `return` would change what {loader.name} returns to its callers"
    elif not ctx.editable(path):
        message += f"; not auto-fixable: the loader lives in {path}, outside the checked paths"
    elif isinstance(source := _guard_source(ctx, owner.module, sources), str):
        edit = MissingGuard(
            path=Path(path), line=lookup.stmt_line, column=lookup.stmt_column, key=lookup.key, exit=lookup.exit,
            source=source, package=_package(owner.module),
        )
        fix = Fix(
            applicability=Applicability.SAFE,
            description=f"skip it first: `if is_pp_missing_parameter({lookup.key}, self): {lookup.exit}`",
            edits=(edit,),
        )
    else:
        message += f"; not auto-fixable: {source[0]}"
    evidence = [Evidence(Path(path), lookup.line, ctx.line(path, lookup.line), "lookup")]
    hp = holder.module.path
    evidence.append(Evidence(Path(hp), split.line, ctx.line(hp, split.line), "split"))
    if split.kind == RUN_TIME and skip:
        sp = skip.owner.module.path
        evidence.append(Evidence(Path(sp), skip.loader.checks, ctx.line(sp, skip.loader.checks), "skip"))
    return RULE.finding(
        path=path, line=lookup.line, column=lookup.column, cls=ref.cls.name, message=message,
        keys=(f"{loader.name}[{lookup.key}]",), fix=fix, evidence=evidence,
    )


def _tower(ref: ClassRef) -> bool:
    return bool(TOWER.search(ref.cls.name))


def _guard_source(ctx: Context, module: ModuleFacts, sources: list[tuple[ClassRef, Split]]) -> str | tuple[str]:
    """The module to import the skip from into `module`: the one that defines the splitter the
    model was built with (a fork's own `make_layers` and `PPMissingLayer` come with their own
    `is_pp_missing_parameter`; vLLM's would not know their placeholders). Or, as a 1-tuple, why
    it is not known."""
    found = {_splitter_guard(ctx, holder.module, split) if split.kind != RUN_TIME else _bound_guard(module)
             for holder, split in sources if not _tower(holder)}
    unknown = sorted(f for f in found if isinstance(f, tuple))
    if unknown:
        return unknown[0]
    if len(found) > 1:
        return (f"the layers are split by the splitters of {' and '.join(sorted(map(str, found)))}, whose skips differ",)
    source = str(found.pop())
    bound = {target for target, _ in module.imports.get(GUARD, ())}
    if bound and bound != {source} and not (source == UTILS and all(_vllm(b) for b in bound)):
        return (f"the file's `{GUARD}` comes from {', '.join(sorted(bound))}, not from {source}, "
                "whose splitter built the layers",)
    return source


def _bound_guard(module: ModuleFacts) -> str | tuple[str]:
    """The guard for layers split inside a model built at run time: the `is_pp_missing_parameter`
    that `module`, the loader's file, binds (the loaders' own skips call it)."""
    bound = {target for target, _ in module.imports.get(GUARD, ())}
    bound |= {module.module} if _defines(module, GUARD) else set()
    if len(bound) == 1:
        return bound.pop()
    return (f"the layers are split inside {RUN_TIME}, and {module.module} binds "
            f"{'no' if not bound else 'more than one'} `{GUARD}` to skip them with",)


def _splitter_guard(ctx: Context, module: ModuleFacts, split: Split) -> str | tuple[str]:
    """Where the `is_pp_missing_parameter` that matches `split`'s splitter (called in `module`)
    lives (1-tuple: why not known)."""
    head, _, rest = split.callee.partition(".")
    if head and not rest:
        return _named_guard(ctx, module, split.kind, 0)
    middle = rest.rpartition(".")[0]  # `a.b.make_layers`: module `b` of what `a` is
    places = {
        ".".join(filter(None, (f"{target}.{attr}" if attr else target, middle)))
        for target, attr in module.imports.get(head, ())
    }
    return _one_guard(ctx, module, split.callee or split.kind, places, split.kind, 0)


def _named_guard(ctx: Context, module: ModuleFacts, splitter: str, depth: int) -> str | tuple[str]:
    """The guard for `splitter` as a bare name in `module`: its own, if it defines the splitter,
    else that of the module it imports the name from."""
    if _defines(module, splitter):
        if _has_guard(module):
            return module.module
        return (f"{module.module} defines its own `{splitter}` but no `{GUARD}` to skip its placeholders",)
    targets = {target for target, attr in module.imports.get(splitter, ()) if attr == splitter}
    return _one_guard(ctx, module, splitter, targets, splitter, depth)


def _one_guard(ctx: Context, module: ModuleFacts, called: str, places: set[str], splitter: str,
            depth: int) -> str | tuple[str]:
    """The guard for `splitter` when `module` binds the name it calls (`called`) from any of
    `places` (imported twice, say): known when every place gives the same."""
    found = {_module_guard(ctx, place, splitter, depth) for place in sorted(places)}
    if len(found) == 1:
        return found.pop()
    return (f"where {module.module}'s `{called}` comes from is not known",)


def _module_guard(ctx: Context, target: str, splitter: str, depth: int) -> str | tuple[str]:
    """The guard for `splitter` taken from module `target`: vLLM's for vLLM's; else `target`'s own
    when it has one, else that of where `target` takes the splitter from (a re-export)."""
    if _vllm(target):
        return UTILS
    if depth == DEPTH:
        return (f"`{splitter}` is handed on through more than {DEPTH} modules",)
    other = ctx.index.module(target)
    if other is None:
        return (f"`{splitter}` comes from {target}, which is not in the checked tree or the extra paths: "
                f"which `{GUARD}` matches it is not known",)
    if _has_guard(other):
        return target
    return _named_guard(ctx, other, splitter, depth + 1)


def _has_guard(module: ModuleFacts) -> bool:
    """Whether `module` binds `is_pp_missing_parameter`: its own, or one it imports."""
    return GUARD in module.imports or _defines(module, GUARD)


def _defines(module: ModuleFacts, name: str) -> bool:
    """Whether `module` defines `name` at its top level: a class, or a function (found in its text)."""
    pattern = rb"^(?:async[ \t]+)?def[ \t]+" + re.escape(name.encode()) + rb"\b"
    return name in module.classes or re.search(pattern, module.source, re.M) is not None


def _vllm(module: str) -> bool:
    return module == "vllm" or module.startswith("vllm.")


def _package(module: ModuleFacts) -> str:
    """The dotted package `module`'s relative imports start from."""
    return module.module if module.path.endswith("__init__.py") else module.module.rpartition(".")[0]
