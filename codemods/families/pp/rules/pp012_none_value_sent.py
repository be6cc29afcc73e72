"""PP012 none-value-sent: a non-last rank sends None as a value of `IntermediateTensors`."""

from __future__ import annotations

import functools
from pathlib import Path

from ....conditions import consistent
from ....findings import Evidence, Finding
from ....index import ClassRef
from ....rules.base import Context, Rule
from ....vllm_names import PP_INTERFACE
from ..facts.nonevalues import NoneSend
from .holders import held_by

BEFORE = '''\
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory, make_layers
from vllm.sequence import IntermediateTensors


class ScaledDecoderLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        hidden_states = hidden_states + self.mlp(self.input_layernorm(hidden_states)) * self.scale
        return hidden_states, None


class ScaledModel(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: ScaledDecoderLayer(config), prefix=f"{prefix}.layers"
        )
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states", "residual"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = self.embed_tokens(input_ids), None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states, residual = layer(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        return self.norm(hidden_states)
'''

AFTER = '''\
from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory, make_layers
from vllm.sequence import IntermediateTensors


class ScaledDecoderLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        hidden_states = hidden_states + self.mlp(self.input_layernorm(hidden_states)) * self.scale
        return hidden_states, None


class ScaledModel(nn.Module, SupportsPP):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, lambda prefix: ScaledDecoderLayer(config), prefix=f"{prefix}.layers"
        )
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
            ["hidden_states"], config.hidden_size
        )

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states, residual = self.embed_tokens(input_ids), None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = None
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states, residual = layer(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states})
        return self.norm(hidden_states)
'''

RULE = Rule(
    code="PP012",
    name="none-value-sent",
    summary="A non-last rank sends `None` as a value of its `IntermediateTensors`.",
    rationale=(
        "A non-last rank's dict travels key by key: a tensor as a tensor, anything else as pickled "
        "metadata, so a None arrives as None, and the next rank copies every received value into its "
        "buffers (`self.intermediate_tensors[k][:n].copy_(v[:n])`, V2 `received.tensors[k][:n]`): "
        "`TypeError: 'NoneType' object is not subscriptable` at the first real step of rank 1. The None "
        "comes from a literal, from a local bound to None on the first rank that no layer rebinds, from "
        "a parameter that defaults to None, from a method of the model that can return None, or from a "
        "decoder layer that returns None at the position the model unpacks (`return hidden_states, "
        "None` then `{\"residual\": residual}`: gemma4's `residual` and `per_layer_inputs`, #39669, "
        "fixed in #40786 by sending `hidden_states` alone and `per_layer_inputs` only when it is set). "
        "The layer class may be an `__init__` parameter of the model (`layer_type`): its default, what "
        "a subclass hands on, and what a pipeline-parallel model that builds the model hands it "
        "(FlexOlmoForCausalLM hands OlmoeModel a layer that returns `(hidden_states, None)`). "
        "Report only: dropping the key means changing the sender, the factory and the reader "
        "together, and sending a tensor instead means knowing what the next rank does with it; both "
        "are modelling decisions. A value None only under some configuration is reported only when "
        "some configuration both makes it None and sends it: a layer that returns None only when a "
        "config flag is off, read by a model that sends the value only when the flag is on, never "
        "sends None. A factory that returns None (`lambda: None`) is PP004's."
    ),
    before=BEFORE,
    after=AFTER,
    fix=None,
)

DEPTH = 3
PREFERENCE = ("layer", "method", "none", "param")
"""The origin a finding names when a value has several (the most specific first)."""


Found = tuple[ClassRef, int, ClassRef | None]
"""The class whose method returns None, the line of that return, and the class that hands the
sender that layer class: a model that builds the sender, or a subclass (None: the sender's own
choice)."""


class Models:
    """The models around the checked classes, each list found once per run, when first asked."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    @functools.cached_property
    def builders(self) -> list[ClassRef]:
        """The pipeline-parallel models that can hand a model its layer class: the entries, and
        the models of the checked files."""
        ctx = self.ctx
        return [s for s in dict.fromkeys([*ctx.entries, *ctx.subjects]) if PP_INTERFACE in ctx.index.base_names(s)]

    @functools.cached_property
    def subclasses(self) -> dict[ClassRef, list[ClassRef]]:
        """Each class's subclasses among the models of the checked files and the entries, in
        that order."""
        found: dict[ClassRef, list[ClassRef]] = {}
        for model in dict.fromkeys([*self.ctx.subjects, *self.ctx.entries]):
            for base in self.ctx.index.mro(model)[1:]:
                found.setdefault(base, []).append(model)
        return found


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    models = Models(ctx)
    for module, cls in ctx.target_classes():
        if cls.values is None or not cls.values.sends:
            continue
        ref = ClassRef(module, cls)
        by_site: dict[tuple[int, int], list[tuple[NoneSend, Found | None]]] = {}
        for send in cls.values.sends:
            layer = None
            if not consistent(send.guard, send.origin.guard):
                continue
            if send.origin.kind in ("layer", "method"):
                layer = (_none_returning_layer(ctx, ref, send, models) if send.origin.kind == "layer"
                         else _none_returning_method(ctx, ref, send))
                if layer is None:
                    continue
            by_site.setdefault((send.line, send.column), []).append((send, layer))
        if by_site and held_by(ctx, ref, DEPTH, PP_INTERFACE):
            findings.extend(_finding(ctx, ref, sites) for sites in by_site.values())
    return findings


def _none_returning_layer(ctx: Context, ref: ClassRef, send: NoneSend, models: Models) -> Found | None:
    """The layer class built for `self.<attr>` whose forward returns None at `origin.position`
    under a configuration that also sends it, the line of that return, and the class that hands
    `ref` that layer class."""
    origin = send.origin
    for node in ctx.index.mro(ref):
        ctors = [ctor for attr, ctor, _ in (node.cls.values.layer_ctors if node.cls.values else ()) if attr == origin.attr]
        if not ctors:
            continue
        for layer, builder in (found for ctor in ctors for found in _layer_classes(ctx, ref, node, ctor, models)):
            forward = next((n for n in ctx.index.mro(layer) if n.defines("forward")), None)
            returns = forward.cls.values.none_returns if forward and forward.cls.values else ()
            line = next((line for position, line, guard in returns
                         if position == origin.position and consistent(guard, origin.guard, send.guard)), None)
            if forward is not None and line is not None:
                return forward, line, builder
        return None
    return None


def _layer_classes(ctx: Context, ref: ClassRef, node: ClassRef, ctor: str,
                   models: Models) -> list[tuple[ClassRef, ClassRef | None]]:
    """The classes `ctor` (named in `node`, a class of `ref`'s MRO) can be, each with the class
    that hands it in (None: `ref`'s own choice). An `__init__` parameter of `node` is its
    default or what `ref`'s MRO hands on; for a subclass that runs `ref`'s forward, what that
    subclass hands on; and, where nothing in an instance's MRO hands it on, what one of
    `models.builders` hands the instance it builds."""
    if ctor not in node.cls.init_defaults:
        return [(c, None) for c in ctx.index.resolve(node.module, ctor)]
    found: list[tuple[ClassRef, ClassRef | None]] = []
    own = set(ctx.index.mro(ref))
    for instance in [ref, *_heirs(ctx, ref, models)]:
        owner, name = ctx.resolver.argument(instance, node, ctor)
        via = None if owner in own else instance
        found.extend((c, via) for c in ctx.index.resolve(owner.module, name) if (c, via) not in found)
        if owner.key == node.key:
            found.extend(pair for pair in ctx.resolver.handed_in(instance, ctor, models.builders) if pair not in found)
    return found


def _heirs(ctx: Context, ref: ClassRef, models: Models) -> list[ClassRef]:
    """The models that subclass `ref`, run its forward, and can be held by a pipeline-parallel
    model."""
    return [
        s for s in models.subclasses.get(ref, ())
        if (forward := ctx.index.find_method(s, "forward")) is not None
        and forward.owner == ref and held_by(ctx, s, DEPTH, PP_INTERFACE)
    ]


def _none_returning_method(ctx: Context, ref: ClassRef, send: NoneSend) -> Found | None:
    """The class whose method `self.<attr>` resolves to, when that method can return None under a
    configuration that also sends it, and the line of that return."""
    origin = send.origin
    for node in ctx.index.mro(ref):
        if node.defines(origin.attr):
            returns = node.cls.values.none_methods if node.cls.values else ()
            line = next((line for name, line, guard in returns
                         if name == origin.attr and consistent(guard, origin.guard, send.guard)), None)
            return (node, line, None) if line else None
    return None


def _finding(ctx: Context, ref: ClassRef, sites: list[tuple[NoneSend, Found | None]]) -> Finding:
    send, layer = min(sites, key=lambda s: PREFERENCE.index(s[0].origin.kind) if s[0].origin.kind in PREFERENCE else 3)
    path = ref.module.path
    key = f'"{send.key}"' if send.key else "a key"
    origin = send.origin
    evidence = [Evidence(Path(path), send.line, ctx.line(path, send.line), "sent")]
    if origin.kind == "layer" and layer is not None:
        where, line, builder = layer
        handed = f" (the layers {builder.cls.name} hands {ref.cls.name})" if builder else ""
        why = (f"`{send.name}` is position {origin.position} of what {where.cls.name}.forward returns{handed}, "
               f"and it returns None there")
        evidence.append(Evidence(Path(path), origin.line, ctx.line(path, origin.line), "unpacked"))
        evidence.append(Evidence(Path(where.module.path), line, ctx.line(where.module.path, line), "None"))
    elif origin.kind == "method" and layer is not None:
        where, line, _ = layer
        why = f"`{send.name}` is what {where.cls.name}.{origin.attr}() returns, and it can return None"
        evidence.append(Evidence(Path(path), origin.line, ctx.line(path, origin.line), "assigned"))
        evidence.append(Evidence(Path(where.module.path), line, ctx.line(where.module.path, line), "None"))
    elif not send.name:
        why = "the value is a literal None"
    elif origin.kind == "none":
        why = f"`{send.name}` is bound to None on a path that nothing rebinds before the send"
        evidence.append(Evidence(Path(path), origin.line, ctx.line(path, origin.line), "None"))
    else:
        why = f"`{send.name}` is a parameter that defaults to None and is sent as it came"
        evidence.append(Evidence(Path(path), origin.line, ctx.line(path, origin.line), "None"))
    message = (
        f"{ref.cls.name} sends None under {key} to the next PP rank: {why}; the next rank slices it "
        "into its buffer (TypeError 'NoneType' object is not subscriptable at the first step of rank 1); "
        "not auto-fixable: drop the key from the sender, the factory and the reader, or send a tensor"
    )
    return RULE.finding(path=path, line=send.line, column=send.column, cls=ref.cls.name, message=message,
                        keys=(send.key,) if send.key else (), evidence=evidence)
