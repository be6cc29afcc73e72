"""Whether a prefix tail provably names a module otherwise than its attribute (PF004): the names the
quantization config's lists are in, after the model's weights mapper, against the name the prefix
gives."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ....facts import ModuleFacts
from ....index import ClassRef
from ....rules.base import Context
from ..facts.names import Named, Rename
from .layers import LAYERS, facts, init_owner

ATTENTION = frozenset({
    "Attention", "MLAAttention", "MultiHeadAttention", "EncoderOnlyAttention", "CrossAttention",
    "ChunkedLocalAttention", "StaticSinkAttention",
})
"""Layers whose prefix is their KV-cache name in the forward context (by vLLM's convention
`<...>.attn`), which no checkpoint holds a module for: the quantization methods pick their
KV-cache method by the layer's type."""
BUILDERS = frozenset({"init_vllm_registered_model"})
"""vLLM's functions that build a model class with the `prefix` they are given."""
ROOTS = ("", "model.layers.0.")
"""Where a module can sit, for a regex rename: at the top or inside."""
CHILD = ".proj"
"""A layer below the module: the lists name layers, and a mapper's `.conv.` needs the dot after."""


@dataclass(frozen=True)
class Verdict:
    name: str
    """What the prefix names the module (its tail, or an element's first part)."""
    mapper: str
    """The class whose weights mapper maps `name` onto the attribute; "" when nothing in the file
    spells `name` (the checkpoint names the module by its attribute)."""


def judge(ctx: Context, module: ModuleFacts, named: Named) -> Verdict | None:
    """The proof that `named` names its module otherwise than its attribute, or None."""
    if named.element:
        name = named.head
        if not name.isidentifier() or name == named.attr:
            return None  # an index, or the attribute's own name
    else:
        name = named.tail
        if not name or name.rsplit(".", 1)[-1] == named.attr:
            return None  # a placeholder (an index) in the tail, or the attribute's own name
    last = named.ctor.rsplit(".", 1)[-1]
    if last in LAYERS and not reaches(module, named) or _attention(ctx, module, named.ctor):
        return None  # a layer built without a quant_config asks no method for its name; a KV-cache name
    if not names_by_prefix(ctx, module, named.ctor):
        return None
    owner = mapped_by(ctx, module, name, named.attr)
    if owner:
        return Verdict(name, owner)
    if "." in name or spelled(module.source, name):
        return None  # a tail of several parts the callee may skip, or a name the loader may rename by hand
    return Verdict(name, "")


def reaches(module: ModuleFacts, named: Named) -> bool:
    """Whether the call hands what it builds a quantization config: `quant_config`, the engine's
    config (`vllm_config`, a fork's `<package>_config`), or a spread that may carry one."""
    engine = module.module.partition(".")[0] + "_config"
    return any(c in ("quant_config", "vllm_config", engine, "**") for c in named.configs)


def _attention(ctx: Context, module: ModuleFacts, ctor: str) -> bool:
    """Whether the callee is an attention layer, or a class derived from one (a plugin's)."""
    if ctor.rsplit(".", 1)[-1] in ATTENTION:
        return True
    return any(
        base.rsplit(".", 1)[-1] in ATTENTION
        for ref in ctx.index.resolve(module, ctor) for holder in ctx.index.mro(ref)
        for base in (holder.cls.name, *holder.cls.bases)
    )


def names_by_prefix(ctx: Context, module: ModuleFacts, ctor: str) -> bool:
    """Whether the callee names the layers it builds by the `prefix` it is handed: one of vLLM's
    layers or model builders, or a class whose `__init__` takes a `prefix` by name."""
    last = ctor.rsplit(".", 1)[-1]
    if last in LAYERS or last in BUILDERS:
        return True
    for ref in ctx.index.resolve(module, ctor):
        owner = init_owner(ctx, ref)
        if owner is None:
            return False
        found = facts(owner)
        tails = owner.cls.tails if owner.may_hold(r"prefix") else None
        return bool(found and found.init == "param" or tails and tails.takes_prefix)
    return False


def mapped_by(ctx: Context, module: ModuleFacts, old: str, new: str) -> str:
    """The class (of this module, or a base of one) whose weights mapper renames a module `old`
    to `new`; "" when none does."""
    for ref in _holders(ctx, module):
        renames = ref.cls.tails.renames if ref.cls.tails else ()
        if any(maps(rename, old, new) for rename in renames):
            return ref.cls.name
    return ""


def maps(rename: Rename, old: str, new: str) -> bool:
    """Whether one rename turns a module named `old` (dotted parts) into one named `new`: the
    parts that end its two names, once the parts they end in alike are set aside, are `old`'s and
    `new`'s (`".conv." -> ".short_conv."`, `"language." -> "language_model."`,
    `"model.vision_embedding.0" -> "vision_embedding.transformer"`, `"attention.qkv_proj" ->
    "attn.qkv_proj"`); a regex, by what it makes of a layer under `old` (or under its element 0)."""
    if rename.kind == "regex":
        pattern = _compiled(rename.old)
        return pattern is not None and any(
            pattern.sub(rename.new, root + old + index + CHILD) == root + new + index + CHILD
            for root in ROOTS for index in ("", ".0")
        )
    before, after = _parts(rename.old), _parts(rename.new)
    while before and after and before[-1] == after[-1]:
        before, after = before[:-1], after[:-1]
    olds, news = old.split("."), new.split(".")
    return before[-len(olds):] == olds and after[-len(news):] == news


def _holders(ctx: Context, module: ModuleFacts) -> Iterable[ClassRef]:
    """The classes of the module and their bases, each once, that may hold a weights mapper."""
    seen = set()
    for name in module.classes:
        for ref in ctx.index.lookup(module.module, name):
            for holder in ctx.index.mro(ref):
                if holder.key not in seen and holder.may_hold("WeightsMapper"):
                    seen.add(holder.key)
                    yield holder


def _parts(name: str) -> list[str]:
    return [part for part in name.split(".") if part]


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def spelled(source: bytes, name: str) -> bool:
    """Whether a string of the module spells `name` as a dotted part or whole, other than a prefix
    it hands on (`{prefix}.<name>`, `maybe_prefix(prefix, "<name>")`): where a loader, a mapper or
    a packed entry could name the module so. Read from the text: a string on one line, after an
    odd count of its quotes; comments count too, which only keeps the rule silent."""
    for match in _spelling(name).finditer(source):
        start = source.rfind(b"\n", 0, match.start()) + 1
        before = source[start : match.start()]
        if _in_string(before) and not (before.endswith(b"{prefix}.") or _MAYBE.search(before)):
            return True
    return False


def _in_string(line: bytes) -> bool:
    """Whether the end of a line's beginning `line` is inside a string that opens on it."""
    quote = 0
    escaped = False
    for char in line:
        if escaped:
            escaped = False
        elif char == 92 and quote:  # a backslash
            escaped = True
        elif char in (34, 39) and (not quote or quote == char):  # " or '
            quote = 0 if quote else char
        elif char == 35 and not quote:  # a comment
            return True
    return bool(quote)


_MAYBE = re.compile(rb"maybe_prefix\(\s*prefix,\s*[\"']$")


@functools.lru_cache(maxsize=256)
def _spelling(name: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<=[\"'.])" + re.escape(name.encode()) + rb"(?=[\"'.])")
