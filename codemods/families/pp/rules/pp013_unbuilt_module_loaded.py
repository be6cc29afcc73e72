"""PP013 unbuilt-module-loaded: a module built on some PP ranks only gets its weights on every rank."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ....findings import Evidence, Finding
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE
from ..facts.unbuilt import LOADER, Unbuilt
from .holders import held_by

BEFORE = '''\
class MixerModel(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: MixerLayer(config, prefix=prefix), prefix=f"{prefix}.layers"
        )
        if get_pp_group().is_last_rank:
            self.final_mixer = StreamMixer(config, prefix=f"{prefix}.final_mixer")
        else:
            self.final_mixer = None

    def forward(self, input_ids, positions, intermediate_tensors=None):
        ...

    def load_weights(self, weights):
        loader = AutoWeightsLoader(self, ignore_unexpected_prefixes=["final_mixer.inject_scale"])
        return loader.load_weights(weights)
'''

AFTER = '''\
class MixerModel(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: MixerLayer(config, prefix=prefix), prefix=f"{prefix}.layers"
        )
        if get_pp_group().is_last_rank:
            self.final_mixer = StreamMixer(config, prefix=f"{prefix}.final_mixer")
        else:
            self.final_mixer = None

    def forward(self, input_ids, positions, intermediate_tensors=None):
        ...

    def load_weights(self, weights):
        unbuilt = [] if self.final_mixer is not None else ["final_mixer."]
        loader = AutoWeightsLoader(self, ignore_unexpected_prefixes=["final_mixer.inject_scale", *unbuilt])
        return loader.load_weights(weights)
'''

RULE = Rule(
    code="PP013",
    name="unbuilt-module-loaded",
    summary="A module built on some PP ranks only, with no `PPMissingLayer` on the others, gets its "
            "checkpoint weights from `AutoWeightsLoader` on every rank.",
    rationale=(
        "Every rank reads the whole checkpoint. `AutoWeightsLoader` hands each weight to the child "
        "module its name starts with, skips a child that is a `PPMissingLayer`, and raises "
        "`ValueError: There is no module or parameter named '<name>'` for a name with no child "
        "(0.10.1.1 to 0.33.0), unless the loader is told to skip or ignore it. So a module that "
        "`__init__` builds under a rank test (`if get_pp_group().is_last_rank:`) and leaves unset or "
        "None on the other ranks stops the start-up of those ranks, at the first of its weights: "
        "Qwen4Exp's final `hyper_connection_mixer` in 1Cat-vLLM (#485, whose fix skips the mixer's "
        "prefix on the other ranks). The loader may be built in a method that `load_weights` calls, "
        "whatever its name, and the module through a class alias (`Cls = partial(Mixer, ...)`). "
        "A class without a `load_weights` of its own is reached by the "
        "loader of the model that builds it, which walks its children itself. A loader that names "
        "the module (a string ending with its name, or a read of `self.<name>`) is taken to handle "
        "it; a class that the rank test builds without weights (`LogitsProcessor`, a config or "
        "buffer class) is left alone. Report only: a `PPMissingLayer()` on the other ranks changes "
        "what `self.<name> is None` tests there, and which skip argument a release's loader takes "
        "(`skip_prefixes`, `ignore_unexpected_prefixes`, a mapper that drops the name) is the "
        "model's choice."
    ),
    before=BEFORE,
    after=AFTER,
    fix=None,
)

DEPTH = 3
ENTRY = "load_weights"


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for module, cls in ctx.target_classes():
        facts = cls.unbuilt
        if facts is None or not facts.unbuilt:
            continue
        ref = ClassRef(module, cls)
        for reached in _loaders(ctx, ref):
            named = facts.names | reached.names
            left = [u for u in facts.unbuilt if u.attr not in named]
            if left and held_by(ctx, ref, DEPTH, PP_INTERFACE):
                findings.extend(_finding(ctx, ref, reached, u) for u in left)
                break
    return findings


@dataclass(frozen=True)
class Reached:
    """A `load_weights` that builds `AutoWeightsLoader(self)` and reaches the class: the class's
    own (`attr` ""), or, when the class has none, that of a holder that builds it as
    `self.<attr>`; `names` are those the loader and its classes name."""

    loader: ClassRef
    attr: str
    names: frozenset[str]


def _loaders(ctx: Context, ref: ClassRef) -> list[Reached]:
    """The loaders that hand `ref`'s children their weights. `AutoWeightsLoader` calls a child's
    own `load_weights` when it has one, and otherwise walks the child's children itself."""
    own = _auto_loader(ctx, ref)
    if own is not False:
        return [Reached(own, "", own.cls.unbuilt.names)] if own and own.cls.unbuilt else []
    found: list[Reached] = []
    name = ref.cls.name
    for holder in dict.fromkeys([*ctx.subjects, *ctx.entries]):
        if holder.module is not ref.module and name not in holder.module.imports:
            continue  # a class built by a name this module does not bind is not built here
        attrs = sorted({attr for node in ctx.index.mro(holder) for attr, subs in node.cls.submodules.items()
                        if any(sub.ctor.rsplit(".", 1)[-1] == name for sub in subs)})
        built = [attr for attr in attrs if ref in _as_list(ctx.resolver.object_classes(holder, ("self", attr)))]
        loader = _auto_loader(ctx, holder) if built else None
        if loader and loader.cls.unbuilt:
            names = loader.cls.unbuilt.names | (holder.cls.unbuilt.names if holder.cls.unbuilt else frozenset())
            found.extend(Reached(loader, attr, names) for attr in built)
    return found


def _as_list(classes: list[ClassRef] | str) -> list[ClassRef]:
    """What `Resolver.object_classes` found: its classes, none for the reason it gives instead."""
    return classes if isinstance(classes, list) else []


def _auto_loader(ctx: Context, ref: ClassRef) -> ClassRef | None | Literal[False]:
    """The class of `ref`'s MRO whose `load_weights` `ref` runs, when it builds
    `AutoWeightsLoader(self)`; None when that loader is another kind (a parameter dict: PP008's);
    False when no class of the MRO defines one."""
    loader = next((node for node in ctx.index.mro(ref) if node.defines(ENTRY)), None)
    if loader is None:
        return False
    return loader if loader.cls.unbuilt is not None and loader.cls.unbuilt.loader_line else None


def _finding(ctx: Context, ref: ClassRef, reached: Reached, unbuilt: Unbuilt) -> Finding:
    loader = reached.loader
    assert loader.cls.unbuilt is not None
    path, lp, line = ref.module.path, loader.module.path, loader.cls.unbuilt.loader_line
    other = "None" if unbuilt.other else "left unset"
    name = f"{reached.attr}.{unbuilt.attr}" if reached.attr else unbuilt.attr
    via = f" ({ref.cls.name} has no `{ENTRY}` of its own)" if reached.attr else ""
    message = (
        f"`self.{unbuilt.attr}` ({unbuilt.ctor}) is built only where `{unbuilt.built}`, {other} on the other "
        f"ranks, but {loader.cls.name}.{ENTRY} hands every rank the checkpoint's `{name}.*` weights{via} "
        f"through `{LOADER}(self)`, which skips only `PPMissingLayer` children and the names it is told to skip: "
        f"start-up fails on the other ranks (ValueError: There is no module or parameter named '{name}'); "
        f"not auto-fixable: skip `{name}.` in the loader on those ranks, or build a `PPMissingLayer()` there"
    )
    evidence = (
        Evidence(Path(path), unbuilt.line, ctx.line(path, unbuilt.line), "built"),
        Evidence(Path(lp), line, ctx.line(lp, line), "loader"),
    )
    return RULE.finding(path=path, line=unbuilt.line, column=unbuilt.column, cls=ref.cls.name, message=message,
                        evidence=evidence)
